package gateway_test

import "strconv"

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
