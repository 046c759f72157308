// Package doctor_test checks wfguard explain and doctor on a real API server, against states built on
// purpose by direct API writes (including states only a buggy controller produces).
package doctor_test
