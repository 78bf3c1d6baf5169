package egress_test

import (
	"fmt"

	"github.com/execledger/execledger/internal/egress"
)

func ExampleParseAllowlist() {
	allow, err := egress.ParseAllowlist([]string{"api.example.com", "*.corp.local", "10.0.0.0/8"})
	if err != nil {
		panic(err)
	}
	for _, host := range []string{"API.example.com.", "www.example.com", "api.corp.local", "evilcorp.local", "corp.local", "10.1.2.3"} {
		fmt.Println(host, allow.AllowsHost(host))
	}
	_, err = egress.ParseAllowlist([]string{"*"})
	fmt.Println(err)
	// Output:
	// API.example.com. true
	// www.example.com false
	// api.corp.local true
	// evilcorp.local false
	// corp.local false
	// 10.1.2.3 true
	// egress: allowlist entry "*": invalid allowlist entry: matches every host
}
