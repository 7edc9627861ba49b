package auth

import (
	"context"
	"crypto/sha256"
)

// TokenKey is how a cache knows a token without keeping it: its SHA-256
// digest. The admin API sends it to the other nodes of a cluster in place
// of the token itself (Cache.Forget).
type TokenKey = [sha256.Size]byte

// KeyOf returns token's TokenKey.
func KeyOf(token string) TokenKey { return sha256.Sum256([]byte(token)) }

// ActorOf returns the actor (Grant.ActorTokenID) token belongs to: from
// the cache when it holds the token's validation, else from the backend,
// whose answer is not stored (a token about to be revoked is not to be
// cached again). Errors are the backend's (ErrDenied: the backend does not
// know the token, so no actor can be named).
func (c *Cache) ActorOf(ctx context.Context, token string) (string, error) {
	key := KeyOf(token)
	now := c.now()
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		if e := el.Value.(*cacheEntry); now.Before(e.expires) {
			c.mu.Unlock()
			return e.grant.ActorTokenID, nil
		}
	}
	c.mu.Unlock()
	g, err := c.validateRecover(ctx, token)
	if err != nil {
		return "", err
	}
	return g.ActorTokenID, nil
}

// Forget drops the cached validations of the token whose key is given (nil
// for none) and of every token of actor ("" for none), and keeps the
// validations in flight from being stored (as Flush does for all), so the
// next connection with any of them is validated by the backend again. It
// returns how many entries it dropped. It is the admin API's revocation
// (docs/operations.md, "Revoke").
func (c *Cache) Forget(key *TokenKey, actor string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	if key != nil {
		if el, ok := c.entries[*key]; ok {
			c.removeLocked(el)
			n++
		}
	}
	if actor != "" {
		for el := c.order.Front(); el != nil; {
			next := el.Next()
			if el.Value.(*cacheEntry).grant.ActorTokenID == actor {
				c.removeLocked(el)
				n++
			}
			el = next
		}
	}
	c.gen++ // an answer in flight may be for one of them
	clear(c.flights)
	return n
}
