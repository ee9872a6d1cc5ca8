// Command switchyard-keygen prints a new SWITCHYARD_SECRET_KEY (64 hex digits).
package main

import (
	"fmt"

	"switchyard/secrets"
)

func main() { fmt.Println(secrets.NewKey()) }
