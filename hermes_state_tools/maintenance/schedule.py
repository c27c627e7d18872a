"""Running `hermes-state maintain` on a schedule: a systemd user timer and service, a cron line,
and a logrotate rule, filled in with this installation's command and HERMES_HOME.

The files under contrib/ are these texts for a user `alice` (tests/test_schedule.py keeps them in step).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

KINDS = ("systemd", "systemd-service", "systemd-timer", "cron", "logrotate")

EXIT_CODES = """\
#   0 healthy   1 problems remain (see "unfixed" in the report)   2 usage, not a Hermes database
#   3 schema newer than this tool (update hermes-state-tools)   65 damaged: check, then repair/recover
#   70 internal error (a bug)   74 I/O error, e.g. disk full   75 busy: locked past the retry budget"""


@dataclass(frozen=True)
class Installation:
    """Where things are on this machine."""

    command: str        # the hermes-state executable (absolute), or `python -m hermes_state_tools`
    hermes_home: Path
    log_dir: Path
    user: str

    @property
    def log_file(self) -> Path:
        return self.log_dir / "maintain.log"


def systemd_service(inst: Installation) -> str:
    return f"""\
# hermes-state maintain as a systemd *user* service (runs as the user who owns HERMES_HOME).
# Install:  hermes-state schedule --print systemd-service > ~/.config/systemd/user/hermes-state-maintain.service
#           hermes-state schedule --print systemd-timer > ~/.config/systemd/user/hermes-state-maintain.timer
#           systemctl --user daemon-reload && systemctl --user enable --now hermes-state-maintain.timer
#           loginctl enable-linger "$USER"    # so the timer runs while you are logged out
# Logs:     journalctl --user -u hermes-state-maintain   (the JSON report is one line)
# The unit is "failed" on any exit but 0: alert on that (OnFailure= below). Exit codes:
{EXIT_CODES}
[Unit]
Description=Hermes Agent state.db maintenance (check, repair, optimize, vacuum)
Documentation=https://github.com/hermes-state-tools/hermes-state-tools/blob/main/docs/scheduling.md
# Busy (75) is retried below; at most 3 starts an hour.
StartLimitIntervalSec=1h
StartLimitBurst=3
#OnFailure=hermes-state-alert@%n.service

[Service]
Type=oneshot
Environment=HERMES_HOME={inst.hermes_home}
ExecStart={inst.command} maintain --json --no-progress
SyslogIdentifier=hermes-state
# Only "busy" is worth an automatic retry; every other failure needs a person.
Restart=on-failure
RestartSec=10min
RestartPreventExitStatus=1 2 3 65 70 74
Nice=10
IOSchedulingClass=idle
TimeoutStartSec=2h
"""


def systemd_timer(_inst: Installation) -> str:
    return """\
[Unit]
Description=Daily Hermes Agent state.db maintenance

[Timer]
OnCalendar=*-*-* 04:30:00
RandomizedDelaySec=30min
# Catch up on a run missed while the machine was off.
Persistent=true

[Install]
WantedBy=timers.target
"""


def cron(inst: Installation) -> str:
    lock = shlex.quote(str(inst.hermes_home / ".maintain.lock"))
    log = shlex.quote(str(inst.log_file))
    program = Path(shlex.split(inst.command)[0])  # the command is shell-quoted: a path may hold spaces
    path = ":".join(dict.fromkeys([str(program.parent), "/usr/local/bin", "/usr/bin", "/bin"]))
    return f"""\
# hermes-state maintain from cron (install: crontab -e, or hermes-state schedule --print cron | crontab -).
# cron starts with a bare PATH and no HERMES_HOME, and does not expand $HOME on these lines.
PATH={path}
HERMES_HOME={inst.hermes_home}
MAILTO={inst.user}
# Daily at 04:30: the JSON report goes to the log; cron mails only the failure line.
# flock -n: never two runs at once. Busy (75) is transient: not mailed, retried tomorrow. Exit codes:
{EXIT_CODES}
30 4 * * * mkdir -p {shlex.quote(str(inst.log_dir))} && flock -n {lock} {inst.command} maintain --json --no-progress >>{log} 2>&1; rc=$?; [ $rc -eq 0 ] || [ $rc -eq 75 ] || echo "hermes-state maintain failed with exit $rc; see {inst.log_file}"
# Rotate that log weekly (hermes-state schedule --print logrotate > {inst.log_dir}/logrotate.conf).
45 4 * * 0 /usr/sbin/logrotate --state {shlex.quote(str(inst.log_dir / '.logrotate.state'))} {shlex.quote(str(inst.log_dir / 'logrotate.conf'))}
"""  # noqa: E501


def logrotate(inst: Installation) -> str:
    return f"""\
# logrotate rule for the cron job's log (systemd users read the journal instead).
{inst.log_file} {{
    weekly
    rotate 8
    compress
    delaycompress
    missingok
    notifempty
    # each run opens the log anew (>> in cron): no copytruncate needed
}}
"""


def render(kind: str, inst: Installation) -> str:
    """The text of one kind (`systemd` is the service and the timer, each headed by its file name)."""
    if kind == "systemd":
        return (f"# ~/.config/systemd/user/hermes-state-maintain.service\n{systemd_service(inst)}\n"
                f"# ~/.config/systemd/user/hermes-state-maintain.timer\n{systemd_timer(inst)}")
    texts = {"systemd-service": systemd_service, "systemd-timer": systemd_timer, "cron": cron,
             "logrotate": logrotate}
    return texts[kind](inst)
