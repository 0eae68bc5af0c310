package config

import "testing"

// TestGatewayCommandEmptyProgram_RINPUT05: a gateway command whose program is empty (or
// blank, or has a NUL byte) is a config error with its position, from the file or from
// code, never a gateway that fails to start for ever.
func TestGatewayCommandEmptyProgram_RINPUT05(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"gateway: {command: [\"\"]}\n", `f.yaml:1:21: gateway.command[0]: the program must not be empty`},
		{"gateway:\n  command: [\"  \", --port, 1]\n", `f.yaml:2:13: gateway.command[0]: the program must not be empty`},
		{"gateway:\n  command:\n    - gw\n    - \"a\\0b\"\n", `f.yaml:4:7: gateway.command[1]: must not contain a NUL byte`},
	} {
		if got := parseErr(t, tc.src); got != tc.want {
			t.Errorf("%q:\ngot:  %s\nwant: %s", tc.src, got, tc.want)
		}
	}
	// From `schedd run -- ""`: Validate refuses it too.
	c := Default()
	c.Gateway.Command = []string{""}
	if err := c.Validate(); err == nil || err.Error() != "gateway.command[0]: the program must not be empty" {
		t.Errorf("Validate: %v", err)
	}
}
