"""Call analysis, in three kinds of code and one result.

* ``stages/``: pure functions from audio or a transcript to parts of the result (decode, VAD, ASR, diarization,
  emotions, pauses, speakers, goals, categories, fields, summary);
* ``models/``: the models the stages load, where their files are, and the ONNX files themselves;
* ``runtime/``: what runs the stages on one recording, inline or on Ray (the pipeline, its actors, a unit of work);
* ``result.py`` declares the one typed result; ``stored.py``, ``readouts.py`` and ``report.py`` read it back.

Stages may use models; the runtime may use both; models use neither (tests/test_architecture.py).
"""
