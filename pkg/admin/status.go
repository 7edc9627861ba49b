package admin

import (
	_ "embed"
	"net/http"
)

// statusPage is the status page (GET /status): one HTML file with its CSS
// and JavaScript inline, which reads GET /api/info and GET /api/topics
// every 2 s and nothing else.
//
//go:embed status.html
var statusPage []byte

// statusCSP keeps the page to itself: its own inline style and script, and
// requests to the listener that served it; no remote asset, no frame.
const statusCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveStatus serves the status page. The page carries no figures (it
// asks /api/ for them, with the secret it is given), so it is served
// without the secret.
func serveStatus(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", statusCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(statusPage)
}
