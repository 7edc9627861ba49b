package natsbroker

import "github.com/NoLagApp/kraken/pkg/natssubject"

// Topic levels become NATS subject tokens as package natssubject maps
// them (shared with the history stream): reserved bytes, control bytes
// and '%' as '%' and two upper-case hex digits, an empty level as "%".

// appendLevel appends the escaped token of one topic level to b.
func appendLevel(b []byte, level string) []byte { return natssubject.AppendLevel(b, level) }

// keySubject is the subject of the concrete routing key under prefix (e.g.
// "kraken.m"): one escaped token per level.
func keySubject(prefix, key string) string { return natssubject.Key(prefix, key) }

// patternSubjects are the subjects that receive every key the MQTT-style
// pattern matches (natssubject.Patterns).
func patternSubjects(prefix, pattern string) []string { return natssubject.Patterns(prefix, pattern) }
