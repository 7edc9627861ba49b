// Package httpcontrol is the HTTP control backend (CONTROL_BACKEND=http,
// wire-reference.md §5.2): a control.Controller that POSTs JSON reports to a
// control plane.
//
// Requests, all POST with "Content-Type: application/json" and
// "Authorization: Bearer <BACKEND_SECRET>":
//
//	{CONTROL_HTTP_URL}/usage             {"entries":[{"projectId","count","totalBytes"}]}
//	                                     → 2xx, optionally {"blockedProjects":[ids]}
//	{CONTROL_HTTP_URL}/subscriptions     {"changes":[{"actorTokenId","topic","action",…}]}
//	{CONTROL_HTTP_URL}/webhook-failures  {"organizationId",…,"requestHeaders":{name:"[redacted]"},…}
//
// Unlike v0.4.0, the path of CONTROL_HTTP_URL is kept (OQ-28), certificates
// are verified unless Config.InsecureSkipVerify is set, any 2xx status is
// success, redirects are not followed, and answers are read to a bound
// (MaxResponseBytes). Each request times out after Config.Timeout (5 s).
// The JSON shapes are those of the control types' MarshalJSON methods.
//
// # Concurrency
//
// A Controller is safe for concurrent use. It starts no goroutine of its
// own; the HTTP transport keeps idle keep-alive connections (up to four),
// each with its reader and writer goroutines, until Close or 90 s of
// idleness.
package httpcontrol
