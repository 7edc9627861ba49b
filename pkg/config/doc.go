// Package config builds the server configuration from environment variables
// and command-line flags.
//
// Every setting has an environment variable, named as in wire-reference.md §9 where
// the original broker had one, and a flag named after it: the variable
// lowercased with '_' replaced by '-' (WS_PORT is --ws-port). Precedence, from
// lowest to highest: the defaults (one table, see Vars), the environment,
// the flags. An environment variable set to the empty string counts as unset.
//
// Load reports every problem at once: each invalid value (not an integer,
// negative, out of range, an unknown choice) becomes one error naming the
// variable or flag and the bad value, and all of them are joined with
// errors.Join. Each matches ErrInvalid under errors.Is.
//
// Boolean settings take exactly "true" or "false"; anything else is an
// invalid value (the original broker silently read it as false, wire-reference.md
// §9). As flags they may be given bare (--auth-allow-all) or with a value
// (--auth-allow-all=false).
//
// # Concurrency
//
// The package has no mutable state and starts no goroutines; every function
// is safe for concurrent use. A Config is a plain value.
package config
