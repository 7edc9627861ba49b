package noop_test

import (
	"context"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/control/noop"
)

func TestNoopAcceptsEverything(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // even a cancelled context is accepted at once
	var c noop.Controller
	blocked, replace, err := c.ReportUsage(ctx, []control.UsageEntry{{ProjectID: "p", Count: 1}})
	if blocked != nil || replace || err != nil {
		t.Fatalf("ReportUsage = %v, %v, %v; want nil, false, nil", blocked, replace, err)
	}
	if err := c.ReportSubscriptions(ctx, []control.SubscriptionChange{{ActorTokenID: "a"}}); err != nil {
		t.Fatalf("ReportSubscriptions = %v", err)
	}
	if err := c.ReportWebhookFailure(ctx, control.WebhookFailure{}); err != nil {
		t.Fatalf("ReportWebhookFailure = %v", err)
	}
}

// TestNoopNeverBlocks runs a Batcher over noop past its threshold and interval.
func TestNoopNeverBlocks(t *testing.T) {
	b := control.New(control.Config{Controller: noop.Controller{}, UsageInterval: time.Millisecond, UsageThreshold: 1})
	b.Start()
	for range 500 {
		b.RecordPublish("p", 10)
		if b.Blocked("p") {
			t.Fatal("Blocked(p) = true with noop")
		}
	}
	b.RecordSubscription(control.SubscriptionChange{ActorTokenID: "a", Topic: "t", Action: control.ActionSubscribe})
	if err := b.Close(context.Background()); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if s := b.Stats(); s.UsageFailures != 0 || s.BlockedProjects != 0 || s.UsageReports == 0 {
		t.Fatalf("Stats = %+v; want reports, no failures, nothing blocked", s)
	}
}
