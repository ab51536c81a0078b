"""Live calls: audio streamed in while a call lasts (the generic endpoint and Twilio Media Streams), recognised as it
arrives, told as events (partial, final, goal, alert, end), and kept as the call's recording when it ends.

`protocol` reads the messages of both dialects, `audio` turns their frames into 16 kHz samples per track, `events`
holds a call's events for the socket and the SSE readers, `recording` keeps the audio received and stores it through
the upload service, `transcript` keeps its finals beside the recording's analysis, `session` ties them to a
recognition (analysis/runtime/live.py, injected by the API) and `calls` is this process's register of live calls
(which also sends their alerts to the project's webhook). docs/phone-calls.md and docs/api.md describe the protocol.
"""
