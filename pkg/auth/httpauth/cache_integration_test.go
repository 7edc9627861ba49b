package httpauth

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
)

// TestCacheMergesHTTPValidations: auth.Cache in front of a Backend turns
// 1,000 concurrent validations of 10 tokens, against a backend that takes
// 50 ms, into exactly 10 requests (wire-reference.md §4.8).
func TestCacheMergesHTTPValidations(t *testing.T) {
	s := newAuthServer(t, plainHTTP, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		tok := strings.TrimPrefix(fmt.Sprint(bodyOf(r)["accessToken"]), "tok-")
		reply(200, `{"result":"allow","client_attrs":{"actor_token_id":"actor-`+tok+`"}}`)(w, r)
	})
	c := auth.NewCache(newBackend(t, s, Config{}), 30*time.Second, 1000, nil)
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Go(func() {
			tok := fmt.Sprintf("tok-%d", i%10)
			g, err := c.Validate(bg, tok)
			if err != nil {
				t.Error(err)
				return
			}
			if want := "actor-" + strings.TrimPrefix(tok, "tok-"); g.ActorTokenID != want {
				t.Errorf("%s: actor %q, want %q", tok, g.ActorTokenID, want)
			}
		})
	}
	wg.Wait()
	if got := s.calls.Load(); got != 10 {
		t.Fatalf("backend requests = %d, want 10", got)
	}
	if c.Len() != 10 {
		t.Fatalf("cache Len = %d, want 10", c.Len())
	}
}
