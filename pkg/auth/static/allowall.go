package static

import (
	"context"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

// AllowAll is the AUTH_ALLOW_ALL=true development backend (wire-reference.md
// §4.1). It is insecure: any token is accepted with publish and subscribe
// rights on every topic, and the caller should log a loud warning at startup
// (OQ-64).
//
// The synthetic grant: ActorTokenID = the token ("dev-actor" when empty),
// organisation "dev-org", project "dev-project", type "user", app
// "dev-app"/"dev", and one rule {Pattern: "#", Permission: PermPubSub,
// AppID: "dev-app", AppName: "dev"} with no topic and no room, so room
// presence never matches and there are no lobbies. No limits are set.
type AllowAll struct{}

// Validate accepts any token and never fails.
func (AllowAll) Validate(_ context.Context, token string) (*auth.Grant, error) {
	return devGrant(token), nil
}

// Revalidate always succeeds (wire-reference.md §4.9).
func (AllowAll) Revalidate(_ context.Context, actorTokenID string) (*auth.Grant, error) {
	return devGrant(actorTokenID), nil
}

func devGrant(actor string) *auth.Grant {
	if actor == "" {
		actor = "dev-actor"
	}
	return &auth.Grant{
		ActorTokenID:   actor,
		OrganizationID: "dev-org",
		ProjectID:      "dev-project",
		ActorType:      "user",
		AppID:          "dev-app",
		AppName:        "dev",
		Rules: acl.Rules{{
			Pattern:    "#",
			Permission: acl.PermPubSub,
			AppID:      "dev-app",
			AppName:    "dev",
		}},
	}
}

// Instant implements auth.Instant: AllowAll answers from memory.
func (AllowAll) Instant() bool { return true }

// RuleSets returns the one rule list of every grant (auth.RuleLister): any
// topic t of an internal publish is routed to "dev-app/<t>", unless t is
// already such a key.
func (AllowAll) RuleSets() ([]acl.Rules, bool) { return []acl.Rules{devGrant("").Rules}, true }

var (
	_ auth.Authenticator = AllowAll{}
	_ auth.RuleLister    = AllowAll{}
	_ auth.Instant       = AllowAll{}
)
