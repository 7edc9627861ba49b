package session

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/webhook"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// usageTally is a Controller that keeps the usage entries it accepts.
type usageTally struct {
	mu      sync.Mutex
	entries []control.UsageEntry
}

func (u *usageTally) ReportUsage(_ context.Context, e []control.UsageEntry) ([]string, bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries = append(u.entries, e...)
	return nil, false, nil
}

func (*usageTally) ReportSubscriptions(context.Context, []control.SubscriptionChange) error {
	return nil
}

func (*usageTally) ReportWebhookFailure(context.Context, control.WebhookFailure) error { return nil }

// TestPublishUsageBytes checks that an accepted publish is counted with the
// length of its data's JSON rendering, whether that length is computed
// (no trigger webhook) or taken from the rendering sent to the webhook.
func TestPublishUsageBytes(t *testing.T) {
	// Escapes, bin that is not UTF-8 (base64), a float and a scalar key.
	data := msgp.AppendMapHeader(nil, 4)
	data = msgp.AppendString(data, "text")
	data = msgp.AppendString(data, "a \"quoted\"\nline ☃")
	data = msgp.AppendString(data, "bin")
	data = msgp.AppendBytes(data, []byte{0xff, 0x00, 0x01})
	data = msgp.AppendString(data, "f")
	data = msgp.AppendFloat64(data, 1e-7)
	data = msgp.AppendInt(data, -12)
	data = msgp.AppendNil(data)
	js, err := wire.AppendJSON(nil, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, withHook := range []bool{false, true} {
		name := "without trigger webhook"
		if withHook {
			name = "with trigger webhook"
		}
		t.Run(name, func(t *testing.T) {
			tally := &usageTally{}
			b := control.New(control.Config{Controller: tally, UsageInterval: time.Hour})
			b.Start()
			grant := &auth.Grant{ActorTokenID: "bob", ProjectID: "p",
				Rules: acl.Rules{{Pattern: "demo/#", Topic: "demo", Permission: acl.PermPubSub, AppID: "app"}}}
			cfg := Config{Auth: grants{"tok": grant}, Control: b}
			bodies := make(chan []byte, 1)
			if withHook {
				site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					bodies <- body
				}))
				t.Cleanup(site.Close)
				grant.Apps = []auth.App{{ID: "app", Trigger: &auth.Webhook{URL: site.URL}}}
				d := webhook.New(webhook.Config{Client: site.Client()})
				t.Cleanup(func() { _ = d.Close(context.Background()) })
				cfg.Webhooks = d
			}
			p := newProtocolWith(t, cfg)
			tc := p.authed(t)
			p.Handle(&tc.State, tc, &wire.Command{Type: "publish", HasTopic: true, Topic: "demo/a",
				HasData: true, Data: data, MsgRef: "r"})
			tc.expect(t, "published")
			if withHook {
				select {
				case body := <-bodies:
					var got struct{ Data json.RawMessage }
					if err := json.Unmarshal(body, &got); err != nil || string(got.Data) != string(js) {
						t.Fatalf("trigger body %s (%v), want data %s", body, err, js)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no trigger webhook")
				}
			}
			if err := b.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := control.UsageEntry{ProjectID: "p", Count: 1, TotalBytes: int64(len(js))}
			tally.mu.Lock()
			defer tally.mu.Unlock()
			if len(tally.entries) != 1 || tally.entries[0] != want {
				t.Fatalf("usage = %+v, want %+v (%s)", tally.entries, want, js)
			}
		})
	}
}
