package wire

import (
	"fmt"
	"reflect"
	"testing"
)

// absent marks a missing `filters` key in table tests.
type absent struct{}

// manyStrings returns n distinct filter strings.
func manyStrings(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("f%d", i)
	}
	return out
}

// decodeFilters decodes a message of type typ whose `filters` is v.
func decodeFilters(t *testing.T, typ string, v any) *Command {
	t.Helper()
	m := kv{"type", typ, "topic", "t"}
	if _, ok := v.(absent); !ok {
		m = append(m, "filters", v)
	}
	var c Command
	if err := Decode(enc(m), &c); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return &c
}

func TestFilterSpecNormalize(t *testing.T) {
	tests := []struct {
		name    string
		give    any // the subscribe `filters` value
		want    []string
		wantErr string
	}{
		{name: "absent", give: absent{}},
		{name: "null", give: nil},
		{name: "empty array", give: []any{}},
		{name: "string", give: "a", wantErr: ErrInvalidFilterChars},
		{name: "number", give: 5, wantErr: ErrInvalidFilterChars},
		{name: "map", give: kv{"a", "b"}, wantErr: ErrInvalidFilterChars},
		{name: "string items are kept as is", give: []any{"Admin", "color:Red"}, want: []string{"Admin", "color:Red"}},
		{name: "bin items", give: []any{bin("x")}, want: []string{"x"}},
		{name: "AND group", give: []any{[]any{"Size:Large", "color:red"}}, want: []string{"color:red|size:large"}},
		{name: "AND group with Unicode", give: []any{[]any{"ÄRGER", "Zeta", "alpha"}}, want: []string{"alpha|zeta|ärger"}},
		{name: "mixed, in item order", give: []any{"b", []any{"y", "X"}, "a"}, want: []string{"b", "x|y", "a"}},
		{name: "duplicates removed", give: []any{"a", []any{"B", "c"}, "a", []any{"c", "b"}}, want: []string{"a", "b|c"}},
		{name: "case-distinct strings are distinct", give: []any{"A", "a"}, want: []string{"A", "a"}},
		{name: "100 items", give: manyStrings(100), want: func() []string {
			out := make([]string, 100)
			for i := range out {
				out[i] = fmt.Sprintf("f%d", i)
			}
			return out
		}()},
		{name: "101 items", give: manyStrings(101), wantErr: ErrTooManyFilters},
		{name: "101 invalid items", give: make([]any, 101), wantErr: ErrTooManyFilters},
		{name: "empty string", give: []any{"a", ""}, wantErr: ErrInvalidFilterChars},
		{name: "slash", give: []any{"a/b"}, wantErr: ErrInvalidFilterChars},
		{name: "hash", give: []any{"#"}, wantErr: ErrInvalidFilterChars},
		{name: "plus", give: []any{"a+"}, wantErr: ErrInvalidFilterChars},
		{name: "pipe", give: []any{"a|b"}, wantErr: ErrInvalidFilterChars},
		{name: "number item", give: []any{"a", 1}, wantErr: ErrInvalidFilterChars},
		{name: "nil item", give: []any{nil}, wantErr: ErrInvalidFilterChars},
		{name: "map item", give: []any{kv{}}, wantErr: ErrInvalidFilterChars},
		{name: "group of one", give: []any{[]any{"a"}}, wantErr: ErrInvalidFilterChars},
		{name: "empty group", give: []any{[]any{}}, wantErr: ErrInvalidFilterChars},
		{name: "group with a number", give: []any{[]any{"a", 1}}, wantErr: ErrInvalidFilterChars},
		{name: "group with a nested group", give: []any{[]any{"a", []any{"b", "c"}}}, wantErr: ErrInvalidFilterChars},
		{name: "group with an empty string", give: []any{[]any{"a", ""}}, wantErr: ErrInvalidFilterChars},
		{name: "group with a pipe", give: []any{[]any{"a", "b|c"}}, wantErr: ErrInvalidFilterChars},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, typ := range []string{"subscribe", "setFilters"} {
				c := decodeFilters(t, typ, tt.give)
				got, gotErr := c.Filters.Normalize()
				if gotErr != tt.wantErr {
					t.Fatalf("%s: Normalize() error = %q, want %q", typ, gotErr, tt.wantErr)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("%s: Normalize() = %q, want %q", typ, got, tt.want)
				}
			}
		})
	}
}

func TestNormalizeDoesNotModifyItems(t *testing.T) {
	c := decodeFilters(t, "subscribe", []any{[]any{"B", "a"}})
	if _, err := c.Filters.Normalize(); err != "" {
		t.Fatal(err)
	}
	if got := c.Filters.Items[0].Values; !reflect.DeepEqual(got, []string{"B", "a"}) {
		t.Fatalf("item values changed to %q", got)
	}
}

func TestPublishFilter(t *testing.T) {
	tests := []struct {
		name       string
		give       kv // extra publish keys
		want       string
		wantDetail string
	}{
		{name: "unfiltered", give: kv{}},
		{name: "filter as is", give: kv{"filter", "Admin"}, want: "Admin"},
		{name: "filter bin", give: kv{"filter", bin("x")}, want: "x"},
		{name: "filters lowercased (OQ-4)", give: kv{"filters", []any{"A"}}, want: "a"},
		{name: "filters sorted and joined", give: kv{"filters", []any{"Size:Large", "color:red"}}, want: "color:red|size:large"},
		{name: "filters duplicates kept", give: kv{"filters", []any{"b", "a", "b"}}, want: "a|b|b"},
		{name: "filter wins over filters", give: kv{"filters", []any{"x"}, "filter", "Y"}, want: "Y"},
		{name: "empty filter falls back to filters", give: kv{"filter", "", "filters", []any{"X"}}, want: "x"},
		{name: "empty filters array", give: kv{"filters", []any{}}},
		{name: "non-array filters ignored", give: kv{"filters", "a"}},
		{name: "100 filters", give: kv{"filters", manyStrings(100)}, want: joinLowerSorted(func() []string {
			out := make([]string, 100)
			for i := range out {
				out[i] = fmt.Sprintf("f%d", i)
			}
			return out
		}())},

		{name: "filter with slash (OQ-5)", give: kv{"filter", "a/b"}, wantDetail: detailFilterChars},
		{name: "filter with hash", give: kv{"filter", "#"}, wantDetail: detailFilterChars},
		{name: "filter with plus", give: kv{"filter", "+"}, wantDetail: detailFilterChars},
		{name: "filter with pipe", give: kv{"filter", "admin|alice"}, wantDetail: detailFilterChars},
		{name: "filters with pipe", give: kv{"filters", []any{"a", "b|c"}}, wantDetail: detailFiltersChars},
		{name: "filters with slash", give: kv{"filters", []any{"a/"}}, wantDetail: detailFiltersChars},
		{name: "filters with an empty element", give: kv{"filters", []any{"a", ""}}, wantDetail: detailFiltersEmpty},
		{name: "filters with a number", give: kv{"filters", []any{"a", 1}}, wantDetail: detailFiltersEmpty},
		{name: "filters with a nested array", give: kv{"filters", []any{[]any{"a", "b"}}}, wantDetail: detailFiltersEmpty},
		{name: "101 filters", give: kv{"filters", manyStrings(101)}, wantDetail: detailFiltersTooMany},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Command
			if err := Decode(enc(append(kv{"type", "publish", "topic", "t"}, tt.give...)), &c); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			got, gotDetail := PublishFilter(&c)
			if got != tt.want || gotDetail != tt.wantDetail {
				t.Fatalf("PublishFilter() = %q, %q; want %q, %q", got, gotDetail, tt.want, tt.wantDetail)
			}
		})
	}
}
