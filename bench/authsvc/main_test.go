package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/auth/static"
)

func getStats(t *testing.T, url string) Stats {
	t.Helper()
	resp, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// The service's answers are what kraken's HTTP backend accepts, with the
// grant the load generator's topic needs.
func TestServiceWithHTTPBackend(t *testing.T) {
	s := &service{secret: "sec", prefix: "bench-tok", delay: 20 * time.Millisecond}
	srv := httptest.NewServer(s.routes("/v1/kraken"))
	defer srv.Close()
	b, err := httpauth.New(httpauth.Config{BaseURL: srv.URL + "/v1/kraken", Secret: "sec"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	start := time.Now()
	for _, tok := range []string{"bench-tok", "bench-tok-0", "bench-tok-7"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := b.Validate(ctx, tok)
			if err != nil {
				t.Errorf("validate %s: %v", tok, err)
				return
			}
			if g.ActorTokenID != tok {
				t.Errorf("actor %q, want %q", g.ActorTokenID, tok)
			}
			if d := g.Rules.Check("demo/general/bench", acl.OpSubscribe); d != acl.Allowed {
				t.Errorf("subscribe demo/general/bench: %v", d)
			}
		}()
	}
	wg.Wait()
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Errorf("3 calls took %v, want at least the 20 ms delay", el)
	}
	if _, err := b.Validate(ctx, "dev-token-bob"); !errors.Is(err, auth.ErrDenied) {
		t.Errorf("foreign token: %v, want ErrDenied", err)
	}
	if g, err := b.Revalidate(ctx, "bench-tok-7"); err != nil || g.ActorTokenID != "bench-tok-7" {
		t.Errorf("revalidate: %v %v", g, err)
	}
	st := getStats(t, srv.URL)
	if st.Validate != 4 || st.Denied != 1 || st.Revalidate != 1 || st.InFlight != 0 || st.MaxInFlight < 1 || st.DelayNs != int64(20*time.Millisecond) {
		t.Errorf("stats %+v", st)
	}
	if _, err := http.Post(srv.URL+"/stats/reset", "", nil); err != nil {
		t.Fatal(err)
	}
	if st := getStats(t, srv.URL); st.Validate != 0 || st.Revalidate != 0 {
		t.Errorf("after reset %+v", st)
	}
	// Without the secret nothing is counted.
	resp, err := http.Post(srv.URL+"/v1/kraken/validate", "application/json", bytes.NewReader([]byte(`{"accessToken":"bench-tok"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || getStats(t, srv.URL).Validate != 0 {
		t.Errorf("no secret: status %d", resp.StatusCode)
	}
}

// The token file grants the same as the service.
func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if code := tokensMain([]string{"--n", "50"}, f); code != 0 {
		t.Fatalf("tokens: exit %d", code)
	}
	f.Close()
	st, err := static.New(static.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := st.Stats().Tokens; n != 51 {
		t.Errorf("%d tokens, want 51", n)
	}
	for _, tok := range []string{"bench-tok", "bench-tok-0", "bench-tok-49"} {
		g, err := st.Validate(context.Background(), tok)
		if err != nil {
			t.Fatalf("%s: %v", tok, err)
		}
		if g.ActorTokenID != tok || g.Rules.Check("demo/general/bench", acl.OpSubscribe) != acl.Allowed {
			t.Errorf("%s: grant %+v", tok, g)
		}
	}
	if _, err := st.Validate(context.Background(), "bench-tok-50"); !errors.Is(err, auth.ErrDenied) {
		t.Errorf("bench-tok-50: %v, want ErrDenied", err)
	}
}
