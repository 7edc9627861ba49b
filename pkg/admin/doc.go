// Package admin is the admin API of the admin listener (ADMIN_ADDR;
// docs/operations.md, "Admin API"): JSON over HTTP under /api/, behind the
// bearer secret ADMIN_SECRET, to see a node's connections, topics and
// presence and to act on them (disconnect, revoke, drain), and the status
// page that reads it (GET /status).
//
// On BROKER_BACKEND=nats every list and action covers the whole cluster:
// the node asked runs the operation on itself and sends it to the other
// live nodes over the broker (broker.Operator), waits for their answers
// up to Config.Wait, and says in each answer's "nodes" which node answered
// what. The routes are described by openapi.json (GET /api/openapi.json),
// which a test holds to the handlers.
package admin

import _ "embed"

// openAPI is the API's OpenAPI 3.0 document.
//
//go:embed openapi.json
var openAPI []byte
