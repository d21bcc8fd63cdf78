"""A stateful file system of 18 tools with small results (filesystem_chat.py talks to it).

Shaped like the file-system backends that multi-turn tool-use benchmarks replay: commands work
in a current directory that `cd` changes, results are small dicts, mistakes come back as
`{"error": ...}`, and every description opens with the same boilerplate before its own text.
"""

from __future__ import annotations

import json
from typing import Any

from tooliscode import Tool

from .conversation import prop

OPENING = ("This tool belongs to the Harbor file system. It is a simple file system that lets "
           "users work with files and folders, e.g. navigating directories, creating, reading "
           "and writing files, etc. Tool description: ")

Node = dict[str, Any]
"""A directory: names to files (str contents) or directories (Node)."""


def _tree() -> Node:
    budget = "\n".join(["date,category,amount"] + [
        f"2024-{m:02d}-{d:02d},{c},{(m * 37 + d * 11) % 900 + 20}"
        for m in range(1, 7) for d, c in ((3, "travel"), (9, "software"), (17, "travel"),
                                          (24, "office"))])

    def log(seed: int, n: int) -> str:
        levels = ["INFO", "INFO", "WARN", "ERROR", "INFO", "DEBUG"]
        return "\n".join(f"2024-06-{i % 28 + 1:02d} {levels[(i * seed) % 6]} worker-{i % 5} "
                         f"step {i}" for i in range(n))

    return {"alex": {
        "documents": {
            "final_report.pdf": "Quarterly results: revenue up 12%, costs flat.",
            "budget_2024.csv": budget,
            "notes.txt": "call the bank\nrenew passport\nbook flights\nsend invoice",
            "ideas.txt": "offsite in june\nnew logo",
            "drafts": {"draft1.txt": "first draft", "draft2.txt": "second draft"},
        },
        "logs": {"app.log": log(5, 120), "worker.log": log(7, 160), "access.log": log(1, 60)},
        "archive": {},
        "projects": {"alpha": {"README.md": "# Alpha\nA small project.",
                               "todo.txt": "call the bank\nrenew passport\nfix the build\n"
                                           "send invoice"}},
    }}


class FileSystem:
    """The backend: one tree, one current directory."""

    def __init__(self) -> None:
        self.root: Node = _tree()
        self.cwd: list[str] = ["alex"]

    def _dir(self, parts: list[str]) -> Node | None:
        node: Any = self.root
        for part in parts:
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else None

    def _resolve(self, path: str) -> list[str] | None:
        parts = [] if path.startswith("/") else list(self.cwd)
        for piece in path.strip("/").split("/"):
            if piece in ("", "."):
                continue
            if piece == "..":
                if not parts:
                    return None
                parts.pop()
            else:
                parts.append(piece)
        return parts

    @property
    def here(self) -> Node:
        node = self._dir(self.cwd)
        assert node is not None
        return node

    def _file(self, name: str) -> str | dict[str, str]:
        value = self.here.get(name)
        if not isinstance(value, str):
            return {"error": f"{name}: no such file in {self.path()}"}
        return value

    def path(self) -> str:
        return "/" + "/".join(self.cwd)

    # -- the tools ------------------------------------------------------------------------

    def pwd(self) -> dict[str, Any]:
        return {"current_working_directory": self.path()}

    def ls(self, a: bool = False) -> dict[str, Any]:
        names = sorted(n for n in self.here if a or not n.startswith("."))
        return {"current_directory_content": names}

    def cd(self, folder: str) -> dict[str, Any]:
        parts = self._resolve(folder)
        if parts is None or self._dir(parts) is None:
            return {"error": f"cd: {folder}: no such directory"}
        self.cwd = parts
        return {"current_working_directory": self.path()}

    def mkdir(self, dir_name: str) -> dict[str, Any] | None:
        if dir_name in self.here:
            return {"error": f"mkdir: {dir_name}: already exists"}
        self.here[dir_name] = {}
        return None

    def touch(self, file_name: str) -> dict[str, Any] | None:
        if file_name in self.here:
            return {"error": f"touch: {file_name}: already exists"}
        self.here[file_name] = ""
        return None

    def echo(self, content: str, file_name: str | None = None) -> dict[str, Any] | None:
        if file_name is None:
            return {"terminal_output": content}
        self.here[file_name] = content
        return None

    def cat(self, file_name: str) -> dict[str, Any]:
        text = self._file(file_name)
        return text if isinstance(text, dict) else {"file_content": text}

    def find(self, path: str = ".", name: str | None = None) -> dict[str, Any]:
        parts = self._resolve(path)
        start = self._dir(parts) if parts is not None else None
        if start is None:
            return {"error": f"find: {path}: no such directory"}
        found: list[str] = []

        def walk(node: Node, prefix: str) -> None:
            for key, value in sorted(node.items()):
                if name is None or name in key:
                    found.append(f"{prefix}/{key}")
                if isinstance(value, dict):
                    walk(value, f"{prefix}/{key}")

        walk(start, path.rstrip("/"))
        return {"matches": found}

    def wc(self, file_name: str, mode: str = "l") -> dict[str, Any]:
        text = self._file(file_name)
        if isinstance(text, dict):
            return text
        counts = {"l": len(text.splitlines()), "w": len(text.split()), "c": len(text)}
        if mode not in counts:
            return {"error": f"wc: mode must be 'l', 'w' or 'c', not {mode!r}"}
        kinds = {"l": "lines", "w": "words", "c": "characters"}
        return {"count": counts[mode], "type": kinds[mode]}

    def sort(self, file_name: str) -> dict[str, Any]:
        text = self._file(file_name)
        return text if isinstance(text, dict) else {
            "sorted_content": "\n".join(sorted(text.splitlines()))}

    def grep(self, file_name: str, pattern: str) -> dict[str, Any]:
        text = self._file(file_name)
        return text if isinstance(text, dict) else {
            "matching_lines": [line for line in text.splitlines() if pattern in line]}

    def du(self, human_readable: bool = False) -> dict[str, Any]:
        def size(node: Any) -> int:
            return len(node.encode()) if isinstance(node, str) else sum(map(size, node.values()))

        total = size(self.here)
        return {"disk_usage": f"{total / 1024:.1f} KB" if human_readable else f"{total} bytes"}

    def tail(self, file_name: str, lines: int = 10) -> dict[str, Any]:
        text = self._file(file_name)
        return text if isinstance(text, dict) else {
            "last_lines": "\n".join(text.splitlines()[-lines:])}

    def diff(self, file_name1: str, file_name2: str) -> dict[str, Any]:
        one, two = self._file(file_name1), self._file(file_name2)
        for text in (one, two):
            if isinstance(text, dict):
                return text
        a, b = str(one).splitlines(), str(two).splitlines()
        return {"diff_lines": "\n".join([f"- {line}" for line in a if line not in b]
                                        + [f"+ {line}" for line in b if line not in a])}

    def _move(self, source: str, destination: str, keep: bool) -> dict[str, Any]:
        if source not in self.here:
            return {"error": f"{source}: no such file or directory in {self.path()}"}
        parts = self._resolve(destination)
        target = self._dir(parts) if parts is not None else None
        value = self.here[source] if keep else self.here.pop(source)
        value = json.loads(json.dumps(value)) if keep else value  # a copy of a folder is new
        if target is not None:  # into a directory, under the same name
            target[source] = value
            return {"result": f"{source} -> {destination.rstrip('/')}/{source}"}
        self.here[destination] = value  # a new name here
        return {"result": f"{source} -> {destination}"}

    def mv(self, source: str, destination: str) -> dict[str, Any]:
        return self._move(source, destination, keep=False)

    def cp(self, source: str, destination: str) -> dict[str, Any]:
        return self._move(source, destination, keep=True)

    def rm(self, file_name: str) -> dict[str, Any] | None:
        if file_name not in self.here:
            return {"error": f"rm: {file_name}: no such file or directory"}
        del self.here[file_name]
        return None

    def rmdir(self, dir_name: str) -> dict[str, Any] | None:
        if self.here.get(dir_name) != {}:
            return {"error": f"rmdir: {dir_name}: not an empty directory"}
        del self.here[dir_name]
        return None


SPECS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "pwd": ("Return the current working directory path.", {}, []),
    "ls": ("List the contents of the current directory.", {
        "a": prop("boolean", "Show hidden files and directories. Defaults to False.")}, []),
    "cd": ("Change the current working directory to the specified folder.", {
        "folder": prop("string", "The folder to change to: a name in the current directory, "
                     "'..' for the parent, or a path such as '../logs'.")}, ["folder"]),
    "mkdir": ("Create a new directory in the current directory.", {
        "dir_name": prop("string", "The name of the new directory.")}, ["dir_name"]),
    "touch": ("Create a new, empty file of any extension in the current directory.", {
        "file_name": prop("string", "The name of the new file.")}, ["file_name"]),
    "echo": ("Write content to a file in the current directory, or display it in the "
             "terminal when no file is given.", {
                 "content": prop("string", "The content to write or display."),
                 "file_name": prop("string", "The file to write to. Defaults to None.")},
             ["content"]),
    "cat": ("Display the contents of a file of any extension from the current directory.", {
        "file_name": prop("string", "The file to display.")}, ["file_name"]),
    "find": ("Find files or directories in a directory tree whose names contain a given "
             "string.", {
                 "path": prop("string", "The directory to search from. Defaults to the current "
                            "directory."),
                 "name": prop("string", "The string the names must contain. Defaults to None, "
                            "which matches every name.")}, []),
    "wc": ("Count the number of lines, words or characters in a file of any extension in the "
           "current directory.", {
               "file_name": prop("string", "The file to count in."),
               "mode": prop("string", "What to count: 'l' for lines, 'w' for words, 'c' for "
                          "characters. Defaults to 'l'.")}, ["file_name"]),
    "sort": ("Sort the lines of a file in the current directory.", {
        "file_name": prop("string", "The file to sort.")}, ["file_name"]),
    "grep": ("Search for lines in a file of any extension in the current directory that "
             "contain a pattern.", {
                 "file_name": prop("string", "The file to search."),
                 "pattern": prop("string", "The text to look for.")}, ["file_name", "pattern"]),
    "du": ("Estimate the disk usage of the current directory and its contents.", {
        "human_readable": prop("boolean", "Show the size in KB. Defaults to False.")}, []),
    "tail": ("Display the last part of a file of any extension in the current directory.", {
        "file_name": prop("string", "The file to display."),
        "lines": prop("integer", "The number of lines to display. Defaults to 10.")},
             ["file_name"]),
    "diff": ("Compare two files of any extension line by line in the current directory.", {
        "file_name1": prop("string", "The first file."),
        "file_name2": prop("string", "The second file.")}, ["file_name1", "file_name2"]),
    "mv": ("Move a file or directory from the current directory into a directory, or rename "
           "it when the destination is not a directory.", {
               "source": prop("string", "The file or directory to move."),
               "destination": prop("string", "A directory (a path such as '../archive' works) or "
                                 "a new name.")}, ["source", "destination"]),
    "cp": ("Copy a file or directory from the current directory into a directory, or to a new "
           "name when the destination is not a directory.", {
               "source": prop("string", "The file or directory to copy."),
               "destination": prop("string", "A directory (a path such as '../archive' works) or "
                                 "a new name.")}, ["source", "destination"]),
    "rm": ("Remove a file or directory from the current directory.", {
        "file_name": prop("string", "The file or directory to remove.")}, ["file_name"]),
    "rmdir": ("Remove an empty directory from the current directory.", {
        "dir_name": prop("string", "The directory to remove.")}, ["dir_name"]),
}


def tools(fs: FileSystem) -> list[Tool]:
    """The backend's tools, in the shape such servers declare them (a JSON Schema each)."""
    return [Tool(name=name, description=OPENING + text, function=getattr(fs, name),
                 parameters={"type": "object", "properties": props, "required": required})
            for name, (text, props, required) in SPECS.items()]
