package api

// StopReply is the reply of POST /v1/stop.
type StopReply struct {
	Stopping bool `json:"stopping"`
}

// DropReply is the reply of DELETE /v1/deliveries/{id}: the id of the entry dropped.
type DropReply struct {
	Dropped int64 `json:"dropped"`
}
