package edge

import "testing"

func TestOriginsAllowed(t *testing.T) {
	o, err := ParseOrigins(" https://app.example.com, https://*.example.org ,http://localhost:3000, http://[::1]:8081")
	if err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]bool{
		"https://app.example.com":      true,
		"HTTPS://App.Example.COM":      true,
		"http://app.example.com":       false, // scheme
		"https://app.example.com:8443": false, // port
		"https://evil.com":             false,
		"https://app.example.com.evil": false,
		"https://a.example.org":        true,
		"https://a.b.example.org":      true,
		"https://example.org":          false, // a wildcard is subdomains only
		"https://xexample.org":         false,
		"http://localhost:3000":        true,
		"http://localhost":             false,
		"null":                         false,
		"http://[::1]:8081":            true,
		"http://[::1]:8082":            false,
		"":                             false,
		"https://app.example.com/path": false,
	} {
		if got := o.Allowed([]byte(origin)); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", origin, got, want)
		}
	}
	if !Origins(nil).Allowed([]byte("https://anything")) {
		t.Error("an empty list must allow every origin")
	}
}

func TestParseOriginsRefusesWhatIsNotAnOrigin(t *testing.T) {
	for _, bad := range []string{"example.com", "https://", "https://a.com/path", "https://user@a.com",
		"https://a.*.com", "https://a.com?x=1", "*"} {
		if _, err := ParseOrigins(bad); err == nil {
			t.Errorf("ParseOrigins(%q) accepted it", bad)
		}
	}
	if o, err := ParseOrigins(" , "); err != nil || o != nil {
		t.Errorf("an empty list: %v, %v", o, err)
	}
}

func FuzzOriginsAllowed(f *testing.F) {
	o, _ := ParseOrigins("https://app.example.com,https://*.example.org,http://[::1]:3000")
	for _, s := range []string{"https://app.example.com", "http://[::1]:3000", "null", "https://a.example.org:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		_ = o.Allowed([]byte(origin)) // never panics
	})
}
