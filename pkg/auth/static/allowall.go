package static

import (
	"context"
	"sync"

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
//
// Grants are shared and read-only, as the token file's are: every
// validation of one token, and every revalidation of its actor, returns
// the same *auth.Grant while it is kept (devGrantsCached actors at most; a
// connection keeps its grant whatever is dropped), and every grant shares
// the one rule list.
type AllowAll struct{}

// Validate accepts any token and never fails.
func (AllowAll) Validate(_ context.Context, token string) (*auth.Grant, error) {
	return devGrant(token), nil
}

// Revalidate always succeeds (wire-reference.md §4.9).
func (AllowAll) Revalidate(_ context.Context, actorTokenID string) (*auth.Grant, error) {
	return devGrant(actorTokenID), nil
}

// devGrantsCached bounds the grants AllowAll keeps, in actors: the tokens a
// development broker sees are few, but any client may send new ones.
const devGrantsCached = 1024

// devRules is the one rule list of every AllowAll grant; read-only.
var devRules = acl.Rules{{
	Pattern:    "#",
	Permission: acl.PermPubSub,
	AppID:      "dev-app",
	AppName:    "dev",
}}

// devGrants holds the grant of each recent actor. When full, an arbitrary
// entry is dropped for the new one.
var devGrants struct {
	mu sync.Mutex
	m  map[string]*auth.Grant
}

// devGrant returns actor's grant: the one kept for actor, else a new one,
// kept.
func devGrant(actor string) *auth.Grant {
	if actor == "" {
		actor = "dev-actor"
	}
	devGrants.mu.Lock()
	defer devGrants.mu.Unlock()
	if g, ok := devGrants.m[actor]; ok {
		return g
	}
	g := &auth.Grant{
		ActorTokenID:   actor,
		OrganizationID: "dev-org",
		ProjectID:      "dev-project",
		ActorType:      "user",
		AppID:          "dev-app",
		AppName:        "dev",
		Rules:          devRules,
	}
	if devGrants.m == nil {
		devGrants.m = make(map[string]*auth.Grant)
	}
	if len(devGrants.m) >= devGrantsCached {
		for k := range devGrants.m {
			delete(devGrants.m, k)
			break
		}
	}
	devGrants.m[actor] = g
	return g
}

// Instant implements auth.Instant: AllowAll answers from memory.
func (AllowAll) Instant() bool { return true }

// RuleSets returns the one rule list of every grant (auth.RuleLister): any
// topic t of an internal publish is routed to "dev-app/<t>", unless t is
// already such a key.
func (AllowAll) RuleSets() ([]acl.Rules, bool) { return []acl.Rules{devRules}, true }

var (
	_ auth.Authenticator = AllowAll{}
	_ auth.RuleLister    = AllowAll{}
	_ auth.Instant       = AllowAll{}
)
