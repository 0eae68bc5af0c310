package api

// GatewayJSON is the form Gateway's JSON takes, for the OpenAPI description (package
// api_test).
type GatewayJSON = gatewayJSON
