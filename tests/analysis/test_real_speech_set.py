"""The real-speech set's actor dialogues (scripts/fetch_real_speech.py): which lines become turns, and where a
turn under the game's echo ends. The figures of benchmarks/real_speech.py rest on both."""

from __future__ import annotations

import numpy as np

from scripts.fetch_real_speech import FILLETS, actor_lines, loud_span

LINES = [  # (line id, font, words in Dutch): the English text of each line plays no part
    ("bar-v-videt0", "font_big", "Greenpeace zou hier eens moeten komen kijken."),
    ("bar-v-videt1", "font_big", "Dit zouden die lui van Three Mile Island moeten zien, zeg."),
    ("bar-m-dost", "font_small", "Genoeg. Laten we gaan."),
    ("bar-m-kachna", "font_small", 'Kijk, een \\"eend\\" daar.'),
    ("bar-x-zzz", "font_barrel", "Zzz zzz zzz."),
    ("bar-m-ticho", "font_small", "Wees nu eens stil, wil je?"),
    ("bar-v-ja", "font_big", "Ik?"),
]
DIALOGS = "".join(f'dialogId("{line_id}", "{font}", "In English.")\ndialogStr("{words}")\n\n'
                  for line_id, font, words in LINES)


def _game(tmp_path, recorded: list[str]):
    text_root, sound_root = tmp_path / "text", tmp_path / "sound"
    script = text_root / FILLETS / "script" / "barrel" / "dialogs_nl.lua"
    script.parent.mkdir(parents=True)
    script.write_text(DIALOGS, encoding="utf-8")
    folder = sound_root / FILLETS / "sound" / "barrel" / "nl"
    folder.mkdir(parents=True)
    for line_id in recorded:
        (folder / f"{line_id}.ogg").write_bytes(b"")
    return sound_root, text_root


def test_actor_lines_are_the_heroes_recorded_one_sentence_lines_once_each(tmp_path):
    sound_root, text_root = _game(tmp_path, ["bar-v-videt0", "bar-v-videt1", "bar-m-dost", "bar-m-kachna",
                                             "bar-x-zzz", "bar-v-ja"])
    lines = actor_lines(sound_root, text_root, "nl")

    assert [(path.name, actor, words) for path, actor, words in lines] == [
        ("bar-v-videt0.ogg", "big-fish-nl", "Greenpeace zou hier eens moeten komen kijken."),
        ("bar-m-kachna.ogg", "small-fish-nl", 'Kijk, een "eend" daar.'),
    ]
    # left out: videt1 (a variant of videt0: the game says one), dost (two sentences), zzz (not a hero),
    # ticho (no recording), ja (under three words)


def test_a_turn_ends_where_the_line_falls_under_the_floor_not_where_its_echo_fades(tmp_path):
    rate = 16000
    voice = 0.5 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate)  # 1 s at full level
    tail = 0.5 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate) * 10 ** (-60 * np.arange(rate) / rate / 20)
    line = np.concatenate([np.zeros(rate // 10), voice, tail]).astype(np.float32)  # echo: -60 dB a second

    start, end = loud_span(line, -30.0)
    assert abs(start / rate - 0.1) <= 0.03
    assert abs(end / rate - 1.6) <= 0.03  # 1.1 s of voice, then 0.5 s of echo down to -30 dB
    assert abs(loud_span(line, -20.0)[1] / rate - (1.1 + 20 / 60)) <= 0.03
