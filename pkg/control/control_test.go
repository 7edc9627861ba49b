package control_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/control/controltest"
)

// encode is json.Marshal without HTML escaping, as httpcontrol encodes.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

func TestUsageEntryJSON(t *testing.T) {
	js, err := encode(control.UsageEntry{ProjectID: "p<1>", Count: 3, TotalBytes: 84})
	if err != nil || string(js) != `{"projectId":"p<1>","count":3,"totalBytes":84}` {
		t.Fatalf("json = %s, %v", js, err)
	}
}

func TestSubscriptionChangeJSON(t *testing.T) {
	tests := []struct {
		name string
		give control.SubscriptionChange
		want string
	}{
		{
			name: "plain",
			give: control.SubscriptionChange{ActorTokenID: "a", Topic: "demo/general/<m>", Action: control.ActionUnsubscribe},
			want: `{"actorTokenId":"a","topic":"demo/general/<m>","action":"unsubscribe"}`,
		},
		{
			name: "load balanced with a group and filters",
			give: control.SubscriptionChange{ActorTokenID: "a", Topic: "t", Action: control.ActionSubscribe, LoadBalance: true, LoadBalanceGroup: "p_app_g", Filters: json.RawMessage(` [ "x" , ["y","z"] ] `)},
			want: `{"actorTokenId":"a","topic":"t","action":"subscribe","loadBalance":true,"loadBalanceGroup":"p_app_g","filters":["x",["y","z"]]}`,
		},
		{
			name: "load balanced, no group",
			give: control.SubscriptionChange{ActorTokenID: "a", Topic: "t", Action: control.ActionSubscribe, LoadBalance: true},
			want: `{"actorTokenId":"a","topic":"t","action":"subscribe","loadBalance":true}`,
		},
		{
			name: "group without load balancing, null filters",
			give: control.SubscriptionChange{ActorTokenID: "a", Topic: "t", Action: control.ActionSubscribe, LoadBalanceGroup: "g", Filters: json.RawMessage(`null`)},
			want: `{"actorTokenId":"a","topic":"t","action":"subscribe"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, err := encode(tt.give)
			if err != nil || string(js) != tt.want {
				t.Fatalf("json =\n %s, %v\nwant\n %s", js, err, tt.want)
			}
		})
	}
	if _, err := json.Marshal(control.SubscriptionChange{Filters: json.RawMessage(`[`)}); err == nil {
		t.Fatal("invalid Filters marshalled without an error")
	}
}

func TestWebhookFailureJSON(t *testing.T) {
	f := controltest.SampleFailure()
	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := controltest.CheckFailureJSON(js, f); err != nil {
		t.Fatal(err)
	}

	// Empty ids render null, a missing body {}, no headers {}.
	minimal := control.WebhookFailure{Type: control.FailureTypeTrigger, Timestamp: time.UnixMilli(5)}
	js, err = json.Marshal(minimal)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"organizationId":"","projectId":"","appId":null,"roomId":null,"type":"trigger","webhookUrl":"",` +
		`"requestHeaders":{},"requestBody":{},"responseStatus":0,"errorMessage":"","node":"","timestamp":5}`
	if string(js) != want {
		t.Fatalf("json =\n %s\nwant\n %s", js, want)
	}
}
