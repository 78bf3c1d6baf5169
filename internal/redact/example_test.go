package redact_test

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/execledger/execledger/internal/redact"
)

func Example() {
	r := redact.New(redact.Options{})
	if err := r.AddSecret("s3cr3t-from-vault"); err != nil {
		panic(err)
	}
	fmt.Println(r.String("export GITHUB_TOKEN=ghp_x1; echo s3cr3t-from-vault; tokenizer=bpe"))
	fmt.Println(r.String("curl -H 'Authorization: Bearer eyJ0.eXk.c2ln' https://bob:pw@api.example/v1?api_key=k"))
	fmt.Println(string(r.JSON(json.RawMessage(`{"password":"hunter2","user":"bob","sessions":3}`))))

	var out bytes.Buffer
	w := redact.NewWriter(&out, r)
	w.Write([]byte("first half s3cr3t-fr"))
	w.Write([]byte("om-vault second half\n"))
	w.Close()
	fmt.Print(out.String())
	// Output:
	// export GITHUB_TOKEN=<redacted>; echo <redacted>; tokenizer=bpe
	// curl -H 'Authorization: <redacted>' https://api.example/v1?api_key=<redacted>
	// {"password":"<redacted>","user":"bob","sessions":3}
	// first half <redacted> second half
}
