package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
)

// httpRequest is a plain HTTP request (not the WebSocket upgrade) read from
// the connection's buffered input by net/http's request reader, so its
// framing follows RFC 9112 §6: a Content-Length, or the chunked transfer
// coding (which wins over a Content-Length sent with it); repeated
// Content-Length fields that disagree, or one that is not a number, are
// refused; a body shorter than its length is waited for.
type httpRequest struct {
	*http.Request
	Body []byte // the whole body, decoded from the chunked coding if it was sent so
	// Unframed: neither a Content-Length nor a chunked body, so the body is
	// empty (RFC 9112 §6.3); a handler that needs one answers 411.
	Unframed bool
}

// errIncomplete is readHTTPRequest's "the body has not all arrived yet".
var errIncomplete = errors.New("request body incomplete")

// httpRefusal is a request readHTTPRequest refuses: the status to answer
// (400, 411, 413 or 501), an error code for a JSON body and a reason.
type httpRefusal struct {
	status       int
	code, reason string
}

func (r *httpRefusal) Error() string { return r.reason }

// Refusals of readHTTPRequest (and refuseNoLength of a handler that needs
// a body), one per status.
func refuseMalformed(what string, err error) *httpRefusal {
	return &httpRefusal{400, "bad_request", "malformed " + what + ": " + strings.TrimPrefix(err.Error(), "http: ")}
}

var (
	refuseNoLength = &httpRefusal{411, "length_required", "a Content-Length or a chunked body is required"}
	refuseTooLarge = &httpRefusal{413, "body_too_large", "body too large"}
	refuseTransfer = &httpRefusal{501, "not_implemented", "transfer coding not implemented: only chunked"}
)

// readHTTPRequest reads the request at the start of b, whose head (the
// request line and header fields up to the blank line) is complete. It
// returns errIncomplete while the body is still arriving, and an
// *httpRefusal for a request that cannot be served: 400 for malformed
// framing, 413 when the body is over maxBody bytes (declared or received),
// 501 for a transfer coding other than chunked (RFC 9112 §6.1). The connection is closed after every answer, so the caller
// consumes all of b.
func readHTTPRequest(b []byte, maxBody int) (*httpRequest, error) {
	r := bufio.NewReader(bytes.NewReader(b))
	req, err := http.ReadRequest(r)
	if err != nil {
		if strings.Contains(err.Error(), "unsupported transfer encoding") {
			return nil, refuseTransfer
		}
		return nil, refuseMalformed("request", err)
	}
	chunked := len(req.TransferEncoding) > 0
	if req.ContentLength > int64(maxBody) {
		return nil, refuseTooLarge
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, int64(maxBody)+1))
	switch {
	case len(body) > maxBody:
		return nil, refuseTooLarge
	case errors.Is(err, io.ErrUnexpectedEOF):
		// A chunked body declares its size piece by piece: bound what may
		// be buffered for it (chunk-size lines and trailers on top).
		if chunked && len(b) > 2*maxBody+1024 {
			return nil, refuseTooLarge
		}
		return nil, errIncomplete
	case err != nil:
		return nil, refuseMalformed("body", err)
	}
	return &httpRequest{Request: req, Body: body,
		Unframed: !chunked && len(req.Header.Values("Content-Length")) == 0}, nil
}
