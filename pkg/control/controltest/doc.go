// Package controltest tests control.Controller backends (wire-reference.md §5.2).
//
// Run is the conformance suite every backend's tests call with a factory
// returning the backend and a Recorder: the control plane behind it, which
// records what arrived and scripts the answers (a blocked set, no blocked
// set, failures, hanging). Server is the Recorder of HTTP backends: an
// httptest control plane, plain or TLS, serving the §5.2 endpoints under a
// path prefix. SampleChanges, SampleFailure, CheckFailureJSON and
// Eventually are helpers for tests of the Batcher and of the webhook
// Dispatcher.
//
// # Concurrency
//
// Run's subtests run one after another on the calling test; the concurrency
// subtest waits for its goroutines before returning. A Server is safe for
// concurrent use; its handler runs on the goroutines of net/http, and it is
// closed, with any hanging request released, when the test that made it
// ends.
package controltest
