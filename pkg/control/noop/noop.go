package noop

import (
	"context"

	"github.com/NoLagApp/kraken/pkg/control"
)

// Controller is a control.Controller that delivers nothing and accepts
// everything: every report succeeds at once, and ReportUsage never returns a
// blocked set, so no project is ever blocked (wire-reference.md §5.2, §6.12). The
// zero value is ready to use.
type Controller struct{}

// Interface guard.
var _ control.Controller = Controller{}

// ReportUsage discards entries and returns nil, false, nil: the blocked set
// stays as it is, that is empty.
func (Controller) ReportUsage(context.Context, []control.UsageEntry) ([]string, bool, error) {
	return nil, false, nil
}

// ReportSubscriptions discards changes and returns nil.
func (Controller) ReportSubscriptions(context.Context, []control.SubscriptionChange) error {
	return nil
}

// ReportWebhookFailure discards f and returns nil.
func (Controller) ReportWebhookFailure(context.Context, control.WebhookFailure) error {
	return nil
}
