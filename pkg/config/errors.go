package config

import (
	"errors"
	"fmt"
)

// ErrInvalid matches, under errors.Is, every error Load and Validate report
// about a setting.
var ErrInvalid = errors.New("config: invalid setting")

// fieldError is one problem with one setting. Its message starts with
// "config: " and names the variable or flag.
type fieldError struct{ msg string }

func (e *fieldError) Error() string        { return "config: " + e.msg }
func (e *fieldError) Is(target error) bool { return target == ErrInvalid }

// invalid reports that name (a variable or a flag) has the bad value v.
func invalid(name, v, reason string) error {
	return &fieldError{msg: fmt.Sprintf("%s=%q: %s", name, v, reason)}
}
