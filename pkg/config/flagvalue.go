package config

// flagValue adapts one setting to flag.Value. A bad value is recorded
// instead of stopping the parse, so that every problem is reported at once.
type flagValue struct {
	s   setting
	c   *Config
	rec *recorder
}

func (f *flagValue) String() string { return "" }

func (f *flagValue) Set(v string) error {
	f.rec.overridden(f.s.Env)
	if err := f.s.set(f.c, v); err != nil {
		f.rec.add("", invalid("--"+f.s.Flag, v, err.Error()))
	}
	return nil
}

// IsBoolFlag lets boolean settings be given without a value.
func (f *flagValue) IsBoolFlag() bool { return f.s.isBool }

// recorder collects the problems of one Load in the order they are found. An
// environment problem is dropped when a flag overrides the same variable.
type recorder struct {
	errs []error
	env  []string // the variable of each entry in errs, "" for others
}

func (r *recorder) add(env string, err error) {
	r.errs = append(r.errs, err)
	r.env = append(r.env, env)
}

// overridden forgets the environment problem of env, if any.
func (r *recorder) overridden(env string) {
	for i := range r.env {
		if r.env[i] == env {
			r.errs = append(r.errs[:i], r.errs[i+1:]...)
			r.env = append(r.env[:i], r.env[i+1:]...)
			return
		}
	}
}
