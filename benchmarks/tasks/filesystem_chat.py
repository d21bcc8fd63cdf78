"""Six user turns over the file system of filesystem.py: each answered both ways and checked
against the same steps taken directly on a backend of our own."""

from __future__ import annotations

import ast
import json
from typing import Any

from tooliscode.openai.testing import ScriptedReply

from .conversation import Conversation, Seen, Turn, answer, parallel
from .filesystem import FileSystem, tools

PROMPTS = [
    "Go to my documents folder and tell me which files are there.",
    "How many lines of budget_2024.csv are about travel, and what do they add up to?",
    "Make a folder q3 in documents and copy every .txt file there into it.",
    "Now look at my logs folder: which log file has the most ERROR lines, and how many?",
    "Move that file into the archive folder and show me its last 3 lines.",
    "Which lines differ between notes.txt in documents and todo.txt in projects/alpha?",
]


def _files(seen: Seen) -> ScriptedReply:
    if seen.step == 0:
        return parallel([("cd", {"folder": "documents"}), ("ls", {})])
    return answer(seen.last("ls")["current_directory_content"])


def _travel(seen: Seen) -> ScriptedReply:
    if seen.step == 0:
        return parallel([("grep", {"file_name": "budget_2024.csv", "pattern": "travel"})])
    return answer(_travel_sum(seen.last("grep")["matching_lines"]))


def _travel_sum(rows: list[str]) -> dict[str, int]:
    return {"lines": len(rows), "total": sum(int(r.split(",")[2]) for r in rows)}


def _copy(seen: Seen) -> ScriptedReply:
    texts = [n for n in seen.before("ls")[-1]["current_directory_content"] if n.endswith(".txt")]
    if seen.step == 0:  # the first turn's listing is still in the transcript
        return parallel([("mkdir", {"dir_name": "q3"})]
                        + [("cp", {"source": n, "destination": "q3"}) for n in texts])
    return answer(sorted(texts))


def _errors(seen: Seen) -> ScriptedReply:
    if seen.step == 0:
        return parallel([("cd", {"folder": "../logs"}), ("ls", {})])
    if seen.step == 1:
        return parallel([("grep", {"file_name": n, "pattern": "ERROR"})
                         for n in seen.last("ls")["current_directory_content"]])
    counts = {r.arguments["file_name"]: len(r.value["matching_lines"]) for r in seen.now("grep")}
    worst = max(counts, key=counts.__getitem__)
    return answer({"file": worst, "errors": counts[worst]})


def _archive(seen: Seen) -> ScriptedReply:
    worst = json.loads(seen.answers[-1])["file"]  # its own last answer named it
    if seen.step == 0:
        return parallel([("mv", {"source": worst, "destination": "../archive"}),
                         ("cd", {"folder": "../archive"}),
                         ("tail", {"file_name": worst, "lines": 3})])
    return answer(seen.last("tail")["last_lines"].splitlines())


def _diff(seen: Seen) -> ScriptedReply:
    if seen.step == 0:
        return parallel([("cd", {"folder": "../documents"}), ("cat", {"file_name": "notes.txt"}),
                         ("cd", {"folder": "../projects/alpha"}),
                         ("cat", {"file_name": "todo.txt"})])
    notes, todo = (r.value["file_content"].splitlines() for r in seen.now("cat"))
    return answer(_differ(notes, todo))


def _differ(notes: list[str], todo: list[str]) -> dict[str, list[str]]:
    return {"only_in_notes": [x for x in notes if x not in todo],
            "only_in_todo": [x for x in todo if x not in notes]}


CELLS = [
    ['cd(folder="documents")\nprint(ls()["current_directory_content"])'],
    ['rows = grep(file_name="budget_2024.csv", pattern="travel")["matching_lines"]\n'
     'final_answer({"lines": len(rows), "total": sum(int(r.split(",")[2]) for r in rows)})'],
    ['mkdir(dir_name="q3")\ntexts = [n for n in ls()["current_directory_content"] '
     'if n.endswith(".txt")]\nfor n in texts:\n    cp(source=n, destination="q3")\n'
     'final_answer(sorted(texts))'],
    ['cd(folder="../logs")\n'
     'errors = {n: len(grep(file_name=n, pattern="ERROR")["matching_lines"])\n'
     '          for n in ls()["current_directory_content"]}\n'
     'worst = max(errors, key=errors.get)\nprint(worst, errors[worst])'],
    ['mv(source=worst, destination="../archive")\ncd(folder="../archive")\n'
     'final_answer(tail(file_name=worst, lines=3)["last_lines"].splitlines())'],
    ['cd(folder="../documents")\nnotes = cat(file_name="notes.txt")["file_content"].splitlines()\n'
     'cd(folder="../projects/alpha")\n'
     'todo = cat(file_name="todo.txt")["file_content"].splitlines()\n'
     'final_answer({"only_in_notes": [x for x in notes if x not in todo],\n'
     '              "only_in_todo": [x for x in todo if x not in notes]})'],
]
"""The code model's cells, one per turn: it finishes with `final_answer` where the answer is
what the code computed, and prints where it wants to read before answering."""


def _expected() -> list[Any]:
    """Each turn's answer, computed directly on a backend of our own."""
    fs = FileSystem()
    fs.cd("documents")
    listing = fs.ls()["current_directory_content"]
    travel = _travel_sum(fs.grep("budget_2024.csv", "travel")["matching_lines"])
    texts = sorted(n for n in listing if n.endswith(".txt"))
    fs.cd("../logs")
    errors = {n: len(fs.grep(n, "ERROR")["matching_lines"]) for n in sorted(fs.here)}
    worst = max(errors, key=errors.__getitem__)
    last = fs.tail(worst, 3)["last_lines"].splitlines()
    fs.cd("../documents")
    notes = fs.cat("notes.txt")["file_content"].splitlines()
    fs.cd("../projects/alpha")
    todo = fs.cat("todo.txt")["file_content"].splitlines()
    return [listing, travel, texts, {"file": worst, "errors": errors[worst]}, last,
            _differ(notes, todo)]


def _listing(output: str) -> list[str]:
    return ast.literal_eval(output)


def _worst(output: str) -> dict[str, Any]:
    name, count = output.split()
    return {"file": name, "errors": int(count)}


def conversation() -> Conversation:
    plain = [_files, _travel, _copy, _errors, _archive, _diff]
    replies = [_listing, None, None, _worst, None, None]
    turns = [Turn(*parts) for parts in zip(PROMPTS, plain, CELLS, _expected(), replies)]
    return Conversation("file system, 18 tools: 6 user turns", FileSystem, tools, turns)
