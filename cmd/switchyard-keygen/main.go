// Command switchyard-keygen prints a new SWITCHYARD_SECRET_KEY (64 hex digits).
package main

import (
	"fmt"

	"switchyard/store/secrets"
)

func main() { fmt.Println(secrets.NewKey()) }
