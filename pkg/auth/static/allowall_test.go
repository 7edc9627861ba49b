package static

import (
	"context"
	"fmt"
	"testing"
)

// TestAllowAllSharesGrants: AllowAll answers every validation of a token,
// and every revalidation of its actor, with one read-only grant, and every
// grant shares one rule list; the grants it keeps are bounded.
func TestAllowAllSharesGrants(t *testing.T) {
	ctx := context.Background()
	a, _ := AllowAll{}.Validate(ctx, "tok-share")
	b, _ := AllowAll{}.Validate(ctx, "tok-share")
	r, _ := AllowAll{}.Revalidate(ctx, "tok-share")
	other, _ := AllowAll{}.Validate(ctx, "tok-other")
	if a != b || a != r {
		t.Fatalf("one token, three grants: %p %p %p", a, b, r)
	}
	if other == a || other.ActorTokenID != "tok-other" || a.ActorTokenID != "tok-share" {
		t.Fatalf("two tokens: %+v, %+v", a, other)
	}
	if &other.Rules[0] != &a.Rules[0] {
		t.Fatal("the grants do not share their rule list")
	}
	for i := range devGrantsCached + 10 {
		_, _ = AllowAll{}.Validate(ctx, fmt.Sprintf("tok-%d", i))
	}
	devGrants.mu.Lock()
	n := len(devGrants.m)
	devGrants.mu.Unlock()
	if n > devGrantsCached {
		t.Fatalf("%d grants kept, bound %d", n, devGrantsCached)
	}
}
