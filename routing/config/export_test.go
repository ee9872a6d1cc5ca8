package config

// DecodeByItem exposes the item-by-item decoder to the tests.
var DecodeByItem = decodeByItem
