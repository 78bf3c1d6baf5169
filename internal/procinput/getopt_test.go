package procinput

import (
	"fmt"
	"testing"
)

func TestParseOpts(t *testing.T) {
	fs := flags("a:all", "b:", "k:kill-after=", "e:eof[=]", "n:nonblock|nb", ":verbose", ":version", "xy:exclusive")
	cases := []struct {
		args []string
		want string // options as id=value, then the operand index; or the error
	}{
		{[]string{"-a", "x"}, "[all=] 1"},
		{[]string{"-ab", "x"}, "[all= b=] 1"},
		{[]string{"-k5", "x"}, "[kill-after=5] 1"},
		{[]string{"-k", "5", "x"}, "[kill-after=5] 2"},
		{[]string{"-ak", "5"}, "[all= kill-after=5] 2"},
		{[]string{"-ka", "x"}, "[kill-after=a] 1"},
		{[]string{"--kill-after=5", "x"}, "[kill-after=5] 1"},
		{[]string{"--kill-after", "5", "x"}, "[kill-after=5] 2"},
		{[]string{"--kill", "5"}, "[kill-after=5] 2"},
		{[]string{"-e", "x"}, "[eof=] 1"},
		{[]string{"-ex", "y"}, "[eof=x] 1"},
		{[]string{"--eof", "x"}, "[eof=] 1"},
		{[]string{"--eof=x", "y"}, "[eof=x] 1"},
		{[]string{"--nb", "--non", "-y", "-x"}, "[nonblock= nonblock= exclusive= exclusive=] 4"},
		{[]string{"--verbose", "x"}, "[verbose=] 1"},
		{[]string{"--ver"}, "ambiguous option --ver"},
		{[]string{"--", "-a"}, "[] 1"},
		{[]string{"-", "-a"}, "[] 0"},
		{[]string{"x", "-a"}, "[] 0"},
		{[]string{}, "[] 0"},
		{[]string{"-k"}, "option -k lacks its value"},
		{[]string{"--kill-after"}, "option --kill-after lacks its value"},
		{[]string{"--all=1"}, "option --all takes no value"},
		{[]string{"-q"}, "unknown option -q"},
		{[]string{"-aq"}, "unknown option -q"},
		{[]string{"--bogus"}, "unknown option --bogus"},
		{[]string{"--=x"}, "unknown option --"},
	}
	for _, c := range cases {
		opts, i, err := parseOpts(fs, c.args)
		got := fmt.Sprint(err)
		if err == nil {
			s := "["
			for j, o := range opts {
				if j > 0 {
					s += " "
				}
				s += o.id + "=" + o.value
			}
			got = fmt.Sprintf("%s] %d", s, i)
		}
		if got != c.want {
			t.Errorf("parseOpts(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}
