"""The core's command help and names as LLDB's ``command script add -c`` classes give
them (the adapter, lldb/commands.py, only makes the classes and runs them)."""


def _is_item(line: str) -> bool:
    """A line starting an item of an indented list ("  --json  ...")."""
    return line.startswith("  ") and not line[2:3].isspace()


def long_help(doc: str) -> str:
    """A docstring as LLDB's help shows it well: LLDB wraps lines itself, so each
    paragraph, and each option with its description, becomes one line."""
    paragraphs = []
    for paragraph in doc.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if lines and _is_item(lines[0]):  # a list of options or settings
            options: list[str] = []
            for line in lines:
                if _is_item(line) or not options:
                    options.append(line.rstrip())
                else:
                    options[-1] += " " + line.strip()
            paragraphs.append("\n".join(options))
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def lldb_help(text: str) -> str:
    """The core's help, with GDB's command names as LLDB spells them."""
    return text.replace("info jit-regions", "jit-regions").replace(
        "GDB's JIT interface", "the GDB JIT interface")


def short_help(text: str) -> str:
    """The first line of a command's help, as LLDB lists it."""
    return lldb_help(text).strip().splitlines()[0]


def class_name(name: str) -> str:
    """``py-mixed-bt`` -> ``PyMixedBt``: the class LLDB's ``command script add -c``
    names for a command."""
    return "".join(word.capitalize() for word in name.split("-"))
