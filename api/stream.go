package api

// EventError is the type of the line that ends a stream (a streamed
// execution, GET /v1/events) when something fails after the 200 answer
// began: its error says what, as an error body would.
const EventError = "error"
