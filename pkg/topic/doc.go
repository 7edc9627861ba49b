// Package topic validates and matches kraken topics and subscription patterns
// (wire-reference.md §4.4, decisions.md D-2 and OQ-38).
//
// A topic is a string split on '/' into levels; "" is one empty level and
// "a/" is the two levels "a" and "". Levels are compared byte-exactly and
// case-sensitively. In a pattern (or an ACL rule) a level that is exactly "+"
// matches one level with any content, including an empty one, and a LAST
// level that is exactly "#" matches all remaining levels, including none, so
// "a/#" matches "a". Any other use of '+' or '#' is literal text, and so is
// every character of a concrete topic. '$' has no special meaning here: the
// broker treats topics as opaque strings (wire-reference.md §4.5); the hub applies
// the delivery rule of MQTT-4.7.2-1 (a pattern beginning with a wildcard
// gets no topic beginning with '$') itself.
//
// Concurrency: the functions of this package are pure and safe for concurrent
// use. A Trie is not: it is owned by one goroutine (a hub worker), which does
// all Insert, Remove, Match and Len calls, and it takes no locks.
package topic
