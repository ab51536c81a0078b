"""One module per REST resource; each stays thin: parse, authorize, call a service, shape the response."""
