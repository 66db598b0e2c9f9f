"""The shared command policy: parsing, the hard DENY list, file-writing classification."""

from __future__ import annotations

import pytest

from services.kernel.command_policy import command_parts, denied_reason, parse_command, writes_files


def names(command: str) -> list[str]:
    return [part.argv[0] for part in command_parts(command) if part.argv]


def test_lists_pipes_and_and_or_split_into_separate_commands() -> None:
    assert names("a; b && c || d | e & f\ng") == ["a", "b", "c", "d", "e", "f", "g"]


def test_command_substitutions_backticks_and_subshells_are_followed() -> None:
    assert set(names("echo $(whoami) `id` (cd x && make) <(sort y)")) >= {"whoami", "id", "cd", "make", "sort"}


def test_quotes_and_backslashes_are_removed_like_the_shell_does() -> None:
    assert names("s'u'do ls") == ["sudo"]
    assert names("\\sudo ls") == ["sudo"]
    assert parse_command('echo "a; b" \'c && d\'')[0].argv == ("echo", "a; b", "c && d")


def test_here_document_bodies_are_not_commands() -> None:
    assert names("cat > notes.md <<'EOF'\nsudo reboot\nrm -rf /\nEOF\necho done") == ["cat", "echo"]
    assert denied_reason("cat > notes.md <<EOF\nsudo reboot\nEOF") is None


@pytest.mark.parametrize("command", [
    "rm -rf /", "rm -fr /*", "rm -rf //", "rm -rf '/usr/../'", "rm -Rf /etc/", "rm -r -f ~", "rm -rf $HOME", "rm -rf /usr", "rm --no-preserve-root -rf /",
    "sudo ls", "ls && sudo ls", "echo $(sudo id)", "echo `su -c id`", "/usr/bin/sudo id", "doas sh",
    "mkfs.ext4 /dev/sdb1", "dd if=/dev/zero of=out", "echo x > /dev/sda", "cat img | tee /dev/nvme0n1",
    "shutdown -h now", "reboot", "systemctl poweroff", "init 0",
    "git push --force", "git push -f origin main", "git push origin +main", "git -C repo push --force-with-lease",
    "chmod 777 app", "chmod -R a+rwx .", ":(){ :|:& };:",
    "bash -c 'sudo id'", "sh -lc \"rm -rf /\"", "eval 'reboot'", "env X=1 nohup timeout 5 sudo id",
    "find . -exec rm -rf / \\;", "ls | xargs -n 1 sudo rm",
])
def test_dangerous_commands_are_denied_wherever_they_appear(command: str) -> None:
    assert denied_reason(command), command


@pytest.mark.parametrize("command", [
    "rm -rf build/", "rm -rf ./node_modules", "ls -la", "git push origin main", "git push -u origin feat",
    "chmod 755 script.sh", "echo sudo is a word", "grep -r 'rm -rf /' docs", "python -m pytest -q",
    "echo 'reboot'", "dd --help", "cat /dev/sda-notes.txt", "command -v sudo || echo missing",
])
def test_ordinary_commands_are_not_denied(command: str) -> None:
    assert denied_reason(command) is None, command


@pytest.mark.parametrize("command", [
    "echo hi > out.txt", "echo hi >> log", "ls 2> err.txt", "cmd &> all.log", "cat a | tee b",
    "sed -i 's/a/b/' f", "sed -Ei 's/a/b/' f", "perl -pi -e 's/a/b/' f", "cp a b", "mv a b", "rm x", "touch x",
    "mkdir d", "ln -s a b", "truncate -s 0 f", "git checkout -- f", "git commit -m x", "curl -o f url",
    "wget url", "tar xf a.tar", "find . -name '*.pyc' -delete", "echo $(touch x)", "bash -c 'echo > f'",
    "pip install requests", "true && cp a b",
])
def test_commands_that_write_files_count_as_edits(command: str) -> None:
    assert writes_files(command), command


@pytest.mark.parametrize("command", [
    "ls -la", "cat a b", "grep -r x .", "echo hi > /dev/null", "ls 2>&1 | head", "git status", "git diff",
    "python -m pytest -q", "sed -n '1,5p' f", "wget -O - url", "tar tf a.tar", "find . -name x", "echo '>'",
])
def test_read_only_commands_are_not_edits(command: str) -> None:
    assert not writes_files(command), command


def test_a_command_nested_too_deeply_to_parse_is_denied_and_counts_as_an_edit() -> None:
    command = "echo " + "$(" * 600 + "ls" + ")" * 600
    assert (denied_reason(command) or "").startswith("nested too deeply to check")
    assert writes_files(command)
