"""Analysis stages: each a pure function from audio or a transcript to a part of the AnalysisResult."""
