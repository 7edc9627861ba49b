package listener_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
)

// mqttCancelBound is how soon after the client's close the auth service
// must see its request cancelled: well below the auth call's own timeout
// (httpauth.DefaultTimeout, 5 s), so a call that merely timed out fails
// the test.
const mqttCancelBound = 1500 * time.Millisecond

// heldValidations is an HTTP auth service that holds every /validate of
// the token "tok-hold" until the request's context ends, telling arrived
// when it comes in and cancelled when its context ends; any other token
// "tok-<actor>" is allowed at once with the demo room's topics.
type heldValidations struct {
	arrived   chan struct{}
	cancelled chan time.Time
}

func (h *heldValidations) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AccessToken string `json:"accessToken"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	if r.URL.Path != "/v1/kraken/validate" {
		http.NotFound(w, r)
		return
	}
	if req.AccessToken == "tok-hold" {
		h.arrived <- struct{}{}
		<-r.Context().Done()
		h.cancelled <- time.Now()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if len(req.AccessToken) < 5 || req.AccessToken[:4] != "tok-" {
		_, _ = w.Write([]byte(`{"result":"deny"}`))
		return
	}
	fmt.Fprintf(w, `{"result":"allow","client_attrs":{"actor_token_id":%q,"project_id":"demo-project",
		"apps":[{"app_id":"demo-app","app_name":"demo","allowed_topics":[{"pattern":"demo/general/#",
		"topic":"demo-general","permission":"pubSub","room_id":"room-general","room_slug":"general"}]}]}}`,
		req.AccessToken[4:])
}

// Closing the socket while its CONNECT's auth call waits on the HTTP auth
// service cancels the service's request at once (the reactor's hang-up,
// session.Protocol.Hangup), and the listener goes on serving: the MQTT
// side of pkg/server's TestClosingTheConnectionCancelsItsAuthCall.
func TestClosingTheSocketCancelsItsConnectsAuthCall(t *testing.T) {
	svc := &heldValidations{arrived: make(chan struct{}, 4), cancelled: make(chan time.Time, 4)}
	ts := httptest.NewServer(svc)
	t.Cleanup(ts.Close)
	hb, err := httpauth.New(httpauth.Config{BaseURL: ts.URL + "/v1/kraken", Secret: "s", MaxInFlight: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hb.Close() })
	cache := auth.NewCache(hb, 30*time.Second, 1000, nil)
	t.Cleanup(func() { _ = cache.Close() })
	n := startNode(t, func(c *testConfig) { c.Auth = cache })

	c := dial(t, n.mqttAddr())
	c.send(connectPkt(30, "device", "tok-hold"))
	select {
	case <-svc.arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the CONNECT's validation did not reach the auth service")
	}
	closed := time.Now()
	_ = c.c.Close()
	select {
	case at := <-svc.cancelled:
		if d := at.Sub(closed); d > mqttCancelBound {
			t.Fatalf("the auth service saw the cancellation %v after the close, want within %v", d, mqttCancelBound)
		} else {
			t.Logf("cancelled %v after the close", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the CONNECT's validation was not cancelled")
	}

	bob := connected(t, n.mqttAddr(), "tok-bob")
	bob.send(subscribePkt(1, "demo/general/after"))
	if body := bob.expect(0x90); body[2] != 1 {
		t.Fatalf("SUBACK % x after the cancellation, want QoS 1 granted", body)
	}
}
