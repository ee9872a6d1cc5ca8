package handlers

// HealthOps is what the Health page reads (deployment health scores, states
// and probes). Its methods are defined by the worker's health area.
type HealthOps interface{}

// JobsOps is what the Jobs page reads (singleton jobs and their runs).
type JobsOps interface{}
