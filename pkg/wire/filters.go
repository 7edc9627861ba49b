package wire

import (
	"slices"
	"strings"
)

// maxFilters is the largest number of filter values a subscribe, setFilters
// or publish may carry (wire-reference.md §6.9, decisions.md OQ-5).
const maxFilters = 100

// Error strings for rejected subscribe and setFilters filters. They are sent
// verbatim as the `error` of an error frame carrying `topic`
// (wire-reference.md §3.4, §6.9).
const (
	// ErrTooManyFilters: more than 100 top-level filter items.
	ErrTooManyFilters = "too_many_filters (max 100)"
	// ErrInvalidFilterChars: an invalid filter item, or a `filters` value that
	// is neither an array nor null (decisions.md OQ-41).
	ErrInvalidFilterChars = "invalid_filter_chars (/, #, +, | not allowed)"
)

// Details of the invalid_filter error frame for a rejected publish filter
// (decisions.md OQ-5).
const (
	detailFilterChars    = "filter must not contain /, #, + or |"
	detailFiltersChars   = "filters must not contain /, #, + or |"
	detailFiltersEmpty   = "filters must be non-empty strings"
	detailFiltersTooMany = "too many filters (max 100)"
)

// forbiddenFilterChars may not appear in any filter value: they would change
// the broker topic the value is appended to (wire-reference.md §6.9).
const forbiddenFilterChars = "/#+|"

// FilterKind says what the `filters` key of a subscribe or setFilters held
// (wire-reference.md §3.1, §6.9; decisions.md OQ-41).
type FilterKind uint8

const (
	// FiltersAbsent: no `filters` key. No filters.
	FiltersAbsent FilterKind = iota
	// FiltersNull: `filters` was nil. No filters.
	FiltersNull
	// FiltersArray: `filters` was an array; see FilterSpec.Items.
	FiltersArray
	// FiltersInvalid: `filters` was present but neither an array nor nil;
	// rejected with ErrInvalidFilterChars (OQ-41).
	FiltersInvalid
)

// FilterItem is one top-level element of a subscribe or setFilters `filters`
// array (wire-reference.md §6.9).
//
// A string element has Group false and exactly one entry in Values. An array
// element (an AND group) has Group true and its elements in Values. Valid is
// false when the element is neither a string nor an array whose elements are
// all strings (str or bin, wire-reference.md §1.6); Values is then empty.
// The strings are copies of the input.
type FilterItem struct {
	Values []string
	Group  bool
	Valid  bool
}

// FilterSpec is the decoded `filters` of a subscribe or setFilters
// (wire-reference.md §3.1, §6.9).
type FilterSpec struct {
	// Kind says what the key held.
	Kind FilterKind
	// Items holds the array's elements when Kind is FiltersArray. An array of
	// more than 100 elements is recorded only up to its 101st element, which
	// is enough for Normalize to answer ErrTooManyFilters.
	Items []FilterItem
	// Raw is the msgpack of the value exactly as sent, aliasing the decoded
	// buffer; nil when Kind is FiltersAbsent. AppendFiltersUpdated echoes it
	// (wire-reference.md §6.9: the reply carries the client's array unnormalised).
	Raw []byte
}

// Normalize validates and normalises subscribe or setFilters filters
// (wire-reference.md §6.9; decisions.md OQ-4, OQ-41).
//
// It returns (nil, "") when there are no filters: Kind is FiltersAbsent or
// FiltersNull, or the array is empty. errString is non-empty, and values nil,
// when the filters are rejected:
//   - ErrTooManyFilters for more than 100 items;
//   - ErrInvalidFilterChars for Kind FiltersInvalid, and for any invalid
//     item: an empty string, a string containing any of / # + |, an item
//     with Valid false, or a group with fewer than 2 elements or with an
//     empty element or one containing / # + |.
//
// Normalisation: a string item is used as is (not lowercased); an AND group
// is lowercased (strings.ToLower), sorted by bytes and joined with "|", so
// ["Size:Large","color:red"] becomes "color:red|size:large". values follows
// the order of the items, with duplicates removed.
func (s FilterSpec) Normalize() (values []string, errString string) {
	switch s.Kind {
	case FiltersAbsent, FiltersNull:
		return nil, ""
	case FiltersInvalid:
		return nil, ErrInvalidFilterChars
	}
	if len(s.Items) == 0 {
		return nil, ""
	}
	if len(s.Items) > maxFilters {
		return nil, ErrTooManyFilters
	}
	values = make([]string, 0, len(s.Items))
	for i := range s.Items {
		v, ok := normalizeItem(&s.Items[i])
		if !ok {
			return nil, ErrInvalidFilterChars
		}
		if !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	return values, ""
}

// normalizeItem returns the normalised value of one filter item, or false
// when the item is invalid (wire-reference.md §6.9).
func normalizeItem(it *FilterItem) (string, bool) {
	if !it.Valid {
		return "", false
	}
	if !it.Group {
		if len(it.Values) != 1 || !validFilterValue(it.Values[0]) {
			return "", false
		}
		return it.Values[0], true
	}
	if len(it.Values) < 2 {
		return "", false
	}
	for _, v := range it.Values {
		if !validFilterValue(v) {
			return "", false
		}
	}
	return joinLowerSorted(it.Values), true
}

// validFilterValue reports whether v is non-empty and free of / # + |.
func validFilterValue(v string) bool {
	return v != "" && !strings.ContainsAny(v, forbiddenFilterChars)
}

// joinLowerSorted lowercases vs, sorts the results by bytes and joins them
// with "|" (wire-reference.md §6.9). vs is not modified.
func joinLowerSorted(vs []string) string {
	if len(vs) == 1 {
		return strings.ToLower(vs[0])
	}
	lower := make([]string, len(vs))
	for i, v := range vs {
		lower[i] = strings.ToLower(v)
	}
	slices.Sort(lower)
	return strings.Join(lower, "|")
}

// PublishFilter returns the filter value of a publish (wire-reference.md §6.9;
// decisions.md OQ-4, OQ-5). value "" with detail "" means the
// publish is unfiltered.
//
// A non-empty `filter` wins and is used as is. Otherwise a non-empty
// `filters` array (c.HasPubFilters) is lowercased, sorted by bytes and joined
// with "|", so ["A"] gives "a" (OQ-4).
//
// Rejections (OQ-5) return value "" and a short detail for an invalid_filter
// error frame (code CodeInvalidFilter): a `filter` containing any of
// / # + |; a `filters` array of more than 100 elements, with an empty or
// non-string element, or with an element containing any of / # + |.
func PublishFilter(c *Command) (value string, detail string) {
	if c.Filter != "" {
		if strings.ContainsAny(c.Filter, forbiddenFilterChars) {
			return "", detailFilterChars
		}
		return c.Filter, ""
	}
	if !c.HasPubFilters || len(c.PubFilters) == 0 {
		return "", ""
	}
	if len(c.PubFilters) > maxFilters {
		return "", detailFiltersTooMany
	}
	for _, v := range c.PubFilters {
		if v == "" {
			return "", detailFiltersEmpty
		}
		if strings.ContainsAny(v, forbiddenFilterChars) {
			return "", detailFiltersChars
		}
	}
	return joinLowerSorted(c.PubFilters), ""
}
