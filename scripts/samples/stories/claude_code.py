"""The Claude Code sample: a JSONL project log with a subagent."""

from __future__ import annotations

import base64
import difflib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import CWD, Clock, Ids, data_text, dumps_compact, rng_for, role_counts, write_text
from ..project import PROJECT_FILES, SEP_FRAME, Repo
from ..writers import CC_MODEL, ClaudeCodeLog


def _cc_read_result(
    repo: Repo, path: str, offset: int = 1, limit: int | None = None
) -> tuple[str, dict[str, Any]]:
    lines = repo.lines(path)
    end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
    text = repo.numbered(path, offset, limit, arrow=True)
    raw = "\n".join(lines[offset - 1 : end])
    return text, {
        "type": "text",
        "file": {
            "filePath": f"{CWD}/{path}",
            "content": raw,
            "numLines": end - offset + 1,
            "startLine": offset,
            "totalLines": len(lines),
        },
    }


def _cc_edit_result(repo: Repo, path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
    before = repo.text(path)
    repo.patch(path, old, new)
    after = repo.text(path)
    a, b = before.splitlines(), after.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines = []
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[x1:x2]]
            else:
                lines += ["-" + line for line in a[x1:x2]] + ["+" + line for line in b[y1:y2]]
        hunks.append(
            {
                "oldStart": i1 + 1,
                "oldLines": i2 - i1,
                "newStart": j1 + 1,
                "newLines": j2 - j1,
                "lines": lines,
            }
        )
    start = repo.find_line(path, new.splitlines()[0]) if new.strip() else 1
    window = repo.numbered(path, max(1, start - 2), 8, arrow=True)
    msg = f"The file {CWD}/{path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{window}"
    return msg, {
        "filePath": f"{CWD}/{path}",
        "oldString": old,
        "newString": new,
        "originalFile": before,
        "structuredPatch": hunks,
        "userModified": False,
        "replaceAll": False,
    }


def _bash(stdout: str, stderr: str = "") -> dict[str, Any]:
    return {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}


CC_AUTO_SUMMARY = data_text("text/claude_code_auto_summary.txt")


CC_MANUAL_SUMMARY = data_text("text/claude_code_manual_summary.txt")


def build_claude_code(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("claude-code")
    ids = Ids(rng)
    clock = Clock(datetime(2025, 9, 18, 13, 2, 11, 0, tzinfo=UTC), rng)
    session = ids.uuid()
    cc = ClaudeCodeLog(ids, clock, session, "fix/payments-idempotency")
    repo = Repo(PROJECT_FILES)
    cl = "src/app/payments/client.py"
    repo.patch(
        cl,
        "        amount_minor = int(float(amount) * 100)\n",
        "        amount_minor = to_cents(amount, currency)\n",
    )
    repo.patch(
        cl,
        "from app.config import Settings\n",
        "from app.config import Settings\nfrom app.utils.money import to_cents\n",
    )

    def tool(name: str, **inp: Any) -> dict[str, Any]:
        return {"type": "tool_use", "name": name, "input": inp}

    def text(t: str) -> dict[str, Any]:
        return {"type": "text", "text": t}

    def think(t: str) -> dict[str, Any]:
        return {
            "type": "thinking",
            "thinking": t,
            "signature": base64.b64encode(
                bytes(rng.getrandbits(8) for _ in range(rng.randint(200, 360)))
            ).decode(),
        }

    # -------------------------------------------------------------- segment A (auto compaction)
    first = ids.uuid()
    cc.snapshot(first, {})
    cc.lines[-1]["messageId"] = first
    uid = cc.prompt(
        "Make the retry logic in src/app/payments/client.py idempotent and add a test. A retry after a timeout must never "
        "create a second charge. Keep the public method signatures of PaymentsClient."
    )
    cc.lines[-2]["messageId"] = uid
    cc.lines[-2]["snapshot"]["messageId"] = uid
    [r1] = cc.assistant(
        think(
            "Retry after a lost response is the classic double-charge. Need Idempotency-Key on POSTs, same key for every attempt of one logical call. Read the client first."
        ),
        text("I'll start by reading the client and its tests."),
        tool("Read", file_path=f"{CWD}/{cl}"),
    )
    body, tur = _cc_read_result(repo, cl)
    cc.result(r1, body, tur)
    r2, r3 = cc.assistant(
        text(
            "No idempotency key is sent today. Checking whether anything else in the repo already builds one, and reading the client tests."
        ),
        tool("Grep", pattern="(?i)idempot", path=f"{CWD}", output_mode="content", **{"-n": True}),
        tool("Read", file_path=f"{CWD}/tests/payments/test_client.py", offset=1, limit=60),
    )
    cc.result(
        r2,
        "No matches found",
        {"mode": "content", "numFiles": 0, "filenames": [], "content": "", "numLines": 0},
    )
    test_client = "\n".join(
        f"{n:>6}→{line}"
        for n, line in enumerate(
            [
                "from __future__ import annotations",
                "",
                "import urllib.parse",
                "from decimal import Decimal",
                "",
                "import httpx",
                "import pytest",
                "",
                "from app.payments.client import PaymentError, PaymentsClient",
                "",
                'BASE = "https://payments.test"',
                "",
                "",
                'def _intent(minor, currency="usd", status="succeeded"):',
                '    return {"id": "pi_test", "amount": minor, "currency": currency.lower(), "status": status}',
                "",
                "",
                "@pytest.fixture",
                "def payments(settings_factory):",
                "    return PaymentsClient(settings_factory(payments_base_url=BASE), max_attempts=3)",
                "",
                "",
                "def test_retries_on_503_then_succeeds(respx_mock, payments):",
                '    route = respx_mock.post(f"{BASE}/v1/payment_intents").mock(',
                "        side_effect=[httpx.Response(503), httpx.Response(200, json=_intent(1999))]",
                "    )",
                '    charge = payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal("19.99"), currency="USD")',
                '    assert charge.status == "succeeded"',
                "    assert route.call_count == 2",
            ],
            start=1,
        )
    )
    cc.result(
        r3,
        test_client,
        {
            "type": "text",
            "file": {
                "filePath": f"{CWD}/tests/payments/test_client.py",
                "content": "(60 lines)",
                "numLines": 29,
                "startLine": 1,
                "totalLines": 104,
            },
        },
    )
    [r4] = cc.assistant(
        tool(
            "TodoWrite",
            todos=[
                {
                    "content": "Derive a stable idempotency key per logical operation",
                    "status": "in_progress",
                    "activeForm": "Deriving idempotency keys",
                },
                {
                    "content": "Send the same Idempotency-Key on every retry",
                    "status": "pending",
                    "activeForm": "Sending the key on retries",
                },
                {
                    "content": "Tests: timeout then success reuses the key; distinct operations differ",
                    "status": "pending",
                    "activeForm": "Writing idempotency tests",
                },
                {
                    "content": "Run payments tests and the full suite",
                    "status": "pending",
                    "activeForm": "Running the tests",
                },
            ],
        ),
    )
    cc.result(
        r4,
        "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable",
        {
            "oldTodos": [],
            "newTodos": [
                {
                    "content": "Derive a stable idempotency key per logical operation",
                    "status": "in_progress",
                    "activeForm": "Deriving idempotency keys",
                }
            ],
        },
    )
    [r5] = cc.assistant(
        text(
            "I'll have a subagent check how the processor client in our other service (billing-worker) keys its requests, so we stay consistent."
        ),
        tool(
            "Task",
            description="Find idempotency key conventions",
            subagent_type="general-purpose",
            prompt="In /home/maya/src/billing-worker, find where HTTP POSTs to the payment processor are made and how (if at all) an Idempotency-Key is derived. Report file:line and the exact key format. Read-only.",
        ),
    )
    # sidechain: the subagent's own conversation, kept out of the main chain
    saved_tip = cc.tip
    cc.sidechain = True
    cc.tip = None
    cc.prompt(
        "In /home/maya/src/billing-worker, find where HTTP POSTs to the payment processor are made and how (if at all) an Idempotency-Key is derived. Report file:line and the exact key format. Read-only."
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    [s1] = cc.assistant(
        tool(
            "Grep",
            pattern="Idempotency-Key",
            path="/home/maya/src/billing-worker",
            output_mode="content",
            **{"-n": True},
        )
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    cc.result(
        s1,
        '/home/maya/src/billing-worker/worker/processor.py:41:        headers={"Idempotency-Key": _key("payout", payout.id, payout.amount_minor)},\n/home/maya/src/billing-worker/worker/processor.py:18:def _key(kind: str, *parts: object) -> str:',
        {
            "mode": "content",
            "numFiles": 1,
            "filenames": ["/home/maya/src/billing-worker/worker/processor.py"],
            "content": "...",
            "numLines": 2,
        },
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    [s2] = cc.assistant(
        tool(
            "Read",
            file_path="/home/maya/src/billing-worker/worker/processor.py",
            offset=15,
            limit=10,
        )
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    cc.result(
        s2,
        '    15→import hashlib\n    16→\n    17→\n    18→def _key(kind: str, *parts: object) -> str:\n    19→    raw = ":".join([kind, *map(str, parts)])\n    20→    return hashlib.sha256(raw.encode()).hexdigest()[:32]\n    21→\n    22→\n    23→class ProcessorClient:\n    24→    def __init__(self, http):',
        {
            "type": "text",
            "file": {
                "filePath": "/home/maya/src/billing-worker/worker/processor.py",
                "content": "...",
                "numLines": 10,
                "startLine": 15,
                "totalLines": 88,
            },
        },
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    sub_answer = (
        "billing-worker/worker/processor.py:18 defines `_key(kind, *parts)`: it joins kind and parts with ':' and returns the first 32 hex chars "
        'of sha256. Used at processor.py:41 as `_key("payout", payout.id, payout.amount_minor)` in the Idempotency-Key header. No other POSTs set a key.'
    )
    cc.assistant(text(sub_answer))
    cc.lines[-1]["agentId"] = "a7c2e91f"
    cc.sidechain = False
    cc.tip = saved_tip
    cc.result(
        r5,
        [{"type": "text", "text": sub_answer}],
        {
            "status": "completed",
            "prompt": "In /home/maya/src/billing-worker, find where HTTP POSTs ...",
            "agentId": "a7c2e91f",
            "content": [{"type": "text", "text": sub_answer}],
            "totalDurationMs": 21840,
            "totalTokens": 18211,
            "totalToolUseCount": 2,
            "usage": {
                "input_tokens": 9,
                "cache_creation_input_tokens": 3120,
                "cache_read_input_tokens": 14893,
                "output_tokens": 189,
                "service_tier": "standard",
            },
        },
    )

    old_sig = (
        "    def _post_with_retries(self, path: str, body: dict[str, Any]) -> dict[str, Any]:\n"
    )
    new_sig = "    def _post_with_retries(self, path: str, body: dict[str, Any], *, idempotency_key: str) -> dict[str, Any]:\n"
    [r6] = cc.assistant(
        think(
            "Match the worker's convention: sha256 of 'kind:parts', 32 hex. Key per logical operation, computed before the loop. Change _post_with_retries to require a key."
        ),
        text(
            'I\'ll follow the same convention as billing-worker: `sha256("kind:part:...")[:32]`. First, make `_post_with_retries` take the key.'
        ),
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=old_sig, new_string=new_sig),
    )
    msg, tur = _cc_edit_result(repo, cl, old_sig, new_sig)
    cc.result(r6, msg, tur)
    bad_old = "                resp = self._http.post(path, json=body)\n"
    [r7] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/{cl}",
            old_string=bad_old,
            new_string='                resp = self._http.post(path, json=body, headers={"Idempotency-Key": idempotency_key})\n',
        ),
    )
    if bad_old in repo.text(cl):
        raise AssertionError("claude-code: the failing edit must not match")
    cc.result(
        r7,
        "<tool_use_error>String to replace not found in file.\nString:                 resp = self._http.post(path, json=body)\n</tool_use_error>",
        "Error: String to replace not found in file.\nString:                 resp = self._http.post(path, json=body)\n",
        is_error=True,
    )
    loop_at = repo.find_line(cl, "attempt = 0")
    [r8] = cc.assistant(
        text("I misremembered the call: it posts form data, not JSON. Re-reading the loop."),
        tool("Read", file_path=f"{CWD}/{cl}", offset=loop_at - 1, limit=24),
    )
    body, tur = _cc_read_result(repo, cl, loop_at - 1, 24)
    cc.result(r8, body, tur)
    good_old = "                resp = self._http.post(path, data=body)\n"
    good_new = '                resp = self._http.post(path, data=body, headers={"Idempotency-Key": idempotency_key})\n'
    [r9] = cc.assistant(
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=good_old, new_string=good_new)
    )
    msg, tur = _cc_edit_result(repo, cl, good_old, good_new)
    cc.result(r9, msg, tur)
    old_charge = '        data = self._post_with_retries("/v1/payment_intents", body)\n'
    new_charge = '        key = _idempotency_key("charge", invoice_id, amount_minor, currency.upper())\n        data = self._post_with_retries("/v1/payment_intents", body, idempotency_key=key)\n'
    [r10] = cc.assistant(
        text("Now derive keys in `charge` and `refund`."),
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=old_charge, new_string=new_charge),
    )
    msg, tur = _cc_edit_result(repo, cl, old_charge, new_charge)
    cc.result(r10, msg, tur)
    old_refund = '        return self._post_with_retries("/v1/refunds", body)\n'
    new_refund = '        key = _idempotency_key("refund", charge_id, amount_minor if amount_minor is not None else "full")\n        return self._post_with_retries("/v1/refunds", body, idempotency_key=key)\n'
    [r11] = cc.assistant(
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=old_refund, new_string=new_refund)
    )
    msg, tur = _cc_edit_result(repo, cl, old_refund, new_refund)
    cc.result(r11, msg, tur)
    old_tail = "RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})\n"
    new_tail = (
        old_tail + "\n\ndef _idempotency_key(kind: str, *parts: object) -> str:\n"
        '    """Stable per logical operation, so every retry of it reuses the same key."""\n'
        '    raw = ":".join([kind, *map(str, parts)])\n'
        "    return hashlib.sha256(raw.encode()).hexdigest()[:32]\n"
    )
    [r12] = cc.assistant(
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=old_tail, new_string=new_tail)
    )
    msg, tur = _cc_edit_result(repo, cl, old_tail, new_tail)
    cc.result(r12, msg, tur)
    [r13] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/{cl}",
            old_string="import logging\n",
            new_string="import hashlib\nimport logging\n",
        )
    )
    msg, tur = _cc_edit_result(repo, cl, "import logging\n", "import hashlib\nimport logging\n")
    cc.result(r13, msg, tur)
    test_file = (
        "from __future__ import annotations\n\nfrom decimal import Decimal\n\nimport httpx\n\nfrom app.payments.client import PaymentsClient\n\n"
        'BASE = "https://payments.test"\n\n\n'
        'def _ok(minor: int) -> httpx.Response:\n    return httpx.Response(200, json={"id": "pi_1", "amount": minor, "currency": "usd", "status": "succeeded"})\n\n\n'
        "def test_timeout_then_success_reuses_the_key(respx_mock, payments):\n"
        '    route = respx_mock.post(f"{BASE}/v1/payment_intents").mock(side_effect=[httpx.ReadTimeout("lost"), _ok(1999)])\n'
        '    payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal("19.99"), currency="USD")\n'
        '    keys = [call.request.headers["Idempotency-Key"] for call in route.calls]\n'
        "    assert len(keys) == 2 and keys[0] == keys[1]\n\n\n"
        "def test_distinct_invoices_get_distinct_keys(respx_mock, payments):\n"
        '    route = respx_mock.post(f"{BASE}/v1/payment_intents").mock(return_value=_ok(1999))\n'
        '    for invoice in ("inv_1", "inv_2"):\n'
        '        payments.charge(customer_id="cus_1", invoice_id=invoice, amount=Decimal("19.99"), currency="USD")\n'
        '    a, b = (call.request.headers["Idempotency-Key"] for call in route.calls)\n'
        "    assert a != b\n\n\n"
        "def test_refund_keys_differ_from_charge_keys(respx_mock, payments):\n"
        '    charge = respx_mock.post(f"{BASE}/v1/payment_intents").mock(return_value=_ok(1999))\n'
        '    refund = respx_mock.post(f"{BASE}/v1/refunds").mock(return_value=httpx.Response(200, json={"id": "re_1"}))\n'
        '    payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal("19.99"), currency="USD")\n'
        '    payments.refund(charge_id="pi_1", amount_minor=500)\n'
        '    assert charge.calls.last.request.headers["Idempotency-Key"] != refund.calls.last.request.headers["Idempotency-Key"]\n'
    )
    [r14] = cc.assistant(
        text("Adding tests for the retry path and key separation."),
        tool("Write", file_path=f"{CWD}/tests/payments/test_idempotency.py", content=test_file),
    )
    cc.result(
        r14,
        f"File created successfully at: {CWD}/tests/payments/test_idempotency.py",
        {
            "type": "create",
            "filePath": f"{CWD}/tests/payments/test_idempotency.py",
            "content": test_file,
            "structuredPatch": [],
        },
    )
    [r15] = cc.assistant(
        tool("Bash", command="python -m pytest -q tests/payments", description="Run payments tests")
    )
    out = (
        "....................................F..                                  [100%]\n"
        "=================================== FAILURES ===================================\n"
        "_____________________ test_retries_on_503_then_succeeds _______________________\n\n"
        "    def test_retries_on_503_then_succeeds(respx_mock, payments):\n"
        '        route = respx_mock.post(f"{BASE}/v1/payment_intents").mock(\n'
        "            side_effect=[httpx.Response(503), httpx.Response(200, json=_intent(1999))]\n"
        "        )\n"
        '>       charge = payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal("19.99"), currency="USD")\n\n'
        "tests/payments/test_client.py:27: \n" + SEP_FRAME + "\n\n"
        "    def refund(self, *, charge_id: str, amount_minor: int | None = None) -> dict[str, Any]:\n"
        "E   NameError: name '_idempotency_key' is not defined\n\n"
        "src/app/payments/client.py:58: NameError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/payments/test_client.py::test_retries_on_503_then_succeeds - NameError: name '_idempotency_key' is not defined\n"
        "1 failed, 38 passed in 0.91s"
    )
    cc.result(r15, "Exit code 1\n" + out, "Error: Exit code 1\n" + out, is_error=True)
    [r16] = cc.assistant(
        think(
            "NameError? I inserted _idempotency_key after RETRYABLE_STATUS... unless the module was imported before? No — stale .pyc? More likely pytest-xdist? Check file order: maybe my Edit of RETRYABLE_STATUS matched inside a docstring. Read the top of the file."
        ),
        tool(
            "Bash",
            command="grep -n '_idempotency_key\\|^RETRYABLE_STATUS\\|^class PaymentsClient' src/app/payments/client.py",
            description="Locate the helper",
        ),
    )
    grep = "\n".join(
        f"{i}:{line}"
        for i, line in enumerate(repo.lines(cl), start=1)
        if "_idempotency_key" in line
        or line.startswith(("RETRYABLE_STATUS", "class PaymentsClient"))
    )
    cc.result(r16, grep, _bash(grep))
    [r17] = cc.assistant(
        text(
            "The helper is defined at module level before the class, so the NameError came from a stale import; the test process had `app.payments.client` cached by a pytest plugin. Clearing caches and re-running."
        ),
        tool(
            "Bash",
            command="find . -name __pycache__ -path './src/*' -prune -exec rm -rf {} + && python -m pytest -q -p no:cacheprovider tests/payments",
            description="Clear bytecode caches and rerun",
        ),
    )
    out = "".join("." for _ in range(42)).ljust(72) + " [100%]\n42 passed in 0.88s"
    cc.result(r17, out, _bash(out))
    cc.prompt("Looks right. Run the whole suite.")
    [r18] = cc.assistant(
        tool(
            "Bash",
            command="python -m pytest -q",
            description="Run the full test suite",
            timeout=600000,
        )
    )
    out = (
        "\n".join("".ljust(72, ".") + f" [{p:>3}%]" for p in (20, 40, 60, 80))
        + "\n"
        + "".ljust(71, ".")
        + " [100%]\n359 passed, 2 skipped in 10.42s"
    )
    cc.result(r18, out, _bash(out))
    cc.assistant(
        text(
            "All green: 359 passed, 2 skipped. The client now derives one key per logical operation (`charge:<invoice>:<minor>:<CUR>`, `refund:<charge>:<minor|full>`, hashed like billing-worker) and sends it on every retry; three new tests cover retry reuse and key separation."
        )
    )
    # a few more big reads push the context towards the limit before the user moves on
    cc.prompt(
        "Before we move on, show me everything that touches the payments client so I can review it in one place."
    )
    [r19, r20] = cc.assistant(
        tool("Read", file_path=f"{CWD}/{cl}"),
        tool(
            "Bash",
            command="git diff -- src/app/payments tests/payments",
            description="Diff of payments changes",
        ),
    )
    body, tur = _cc_read_result(repo, cl)
    cc.result(r19, body, tur)
    diff = Repo.diff(cl, PROJECT_FILES[cl], repo.text(cl))
    cc.result(r20, diff, _bash(diff))
    cc.assistant(
        text(
            "Above: the full client and the diff. The behaviour change is confined to `_post_with_retries` (requires a key, sends it on every attempt) and the two callers that derive it."
        )
    )
    cc.compact("auto", 167_000, CC_AUTO_SUMMARY)

    # -------------------------------------------------------------- segment B (rewind, manual compaction)
    cc.prompt("Now the flaky webhook test, #431.")
    [r21] = cc.assistant(
        text("Reproducing with the seed from the issue."),
        tool(
            "Bash",
            command="python -m pytest -q -p randomly -p randomly_seed=3127904561 tests/payments/test_webhooks.py",
            description="Reproduce #431",
        ),
    )
    out = (
        "...........F..........                                                   [100%]\n"
        "FAILED tests/payments/test_webhooks.py::test_duplicate_events_are_ignored - AssertionError: assert 'duplicate' == 'applied'\n"
        "1 failed, 21 passed in 0.44s"
    )
    cc.result(r21, "Exit code 1\n" + out, "Error: Exit code 1\n" + out, is_error=True)
    cc.assistant(
        text(
            "Reproduced. `_SEEN_EVENTS` in webhooks.py is module-level and survives between tests, so whichever test handles `evt_1` first makes the other see a duplicate. How would you like to handle it?"
        )
    )
    branch_point = cc.tip
    # the abandoned branch: the user asks for an xfail, then rewinds and asks for a real fix
    cc.counting = False
    cc.prompt("Just mark it xfail for now, I don't want to touch webhooks this week.")
    [ra] = cc.assistant(
        text("Marking it xfail with a reference to #431."),
        tool(
            "Edit",
            file_path=f"{CWD}/tests/payments/test_webhooks.py",
            old_string="def test_duplicate_events_are_ignored(",
            new_string='@pytest.mark.xfail(reason="order-dependent, see #431", strict=False)\ndef test_duplicate_events_are_ignored(',
        ),
    )
    cc.result(
        ra,
        f"The file {CWD}/tests/payments/test_webhooks.py has been updated.",
        {
            "filePath": f"{CWD}/tests/payments/test_webhooks.py",
            "oldString": "def test_duplicate_events_are_ignored(",
            "newString": "@pytest.mark.xfail(...)\ndef test_duplicate_events_are_ignored(",
            "originalFile": "",
            "structuredPatch": [],
            "userModified": False,
            "replaceAll": False,
        },
    )
    cc.assistant(text("Done — the test is xfail (non-strict) and references #431."))
    cc.counting = True
    cc.tip = branch_point
    cc.prompt("Actually, fix it properly: reset the dedupe state per test; don't hide it.")
    [r22, r23] = cc.assistant(
        think(
            "Proper fix: make dedupe state injectable (EventStore), default in-memory store, and an autouse fixture clearing it. Read webhooks.py and the payments conftest together."
        ),
        text("Agreed. Reading the handler and the payments conftest."),
        tool("Read", file_path=f"{CWD}/src/app/payments/webhooks.py"),
        tool("Read", file_path=f"{CWD}/tests/payments/conftest.py"),
    )
    wh = Repo({"src/app/payments/webhooks.py": PROJECT_FILES["src/app/payments/webhooks.py"]})
    body, tur = _cc_read_result(wh, "src/app/payments/webhooks.py")
    cc.result(r22, body, tur)
    conf = "\n".join(
        f"{n:>6}→{line}"
        for n, line in enumerate(
            [
                "import pytest",
                "import respx",
                "",
                "",
                "@pytest.fixture",
                "def respx_mock():",
                '    with respx.mock(base_url="https://payments.test", assert_all_called=False) as mock:',
                "        yield mock",
            ],
            start=1,
        )
    )
    cc.result(
        r23,
        conf,
        {
            "type": "text",
            "file": {
                "filePath": f"{CWD}/tests/payments/conftest.py",
                "content": "...",
                "numLines": 8,
                "startLine": 1,
                "totalLines": 8,
            },
        },
    )
    old_seen = "_SEEN_EVENTS: set[str] = set()\n"
    new_seen = (
        '\n\nclass InMemoryEventStore:\n    """Ids of handled events (per process). Replaced by a Postgres store in #419."""\n\n'
        "    def __init__(self) -> None:\n        self._ids: set[str] = set()\n\n"
        "    def seen(self, event_id: str) -> bool:\n        return event_id in self._ids\n\n"
        "    def add(self, event_id: str) -> None:\n        self._ids.add(event_id)\n\n"
        "    def clear(self) -> None:\n        self._ids.clear()\n\n\nDEFAULT_STORE = InMemoryEventStore()\n"
    )
    [r24] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/src/app/payments/webhooks.py",
            old_string=old_seen,
            new_string=new_seen,
        )
    )
    msg, tur = _cc_edit_result(wh, "src/app/payments/webhooks.py", old_seen, new_seen)
    cc.result(r24, msg, tur)
    old_h = (
        'def handle_event(event: dict[str, Any], invoices: InvoiceService) -> str:\n    if event["id"] in _SEEN_EVENTS:\n'
        '        return "duplicate"\n    _SEEN_EVENTS.add(event["id"])\n'
    )
    new_h = (
        "def handle_event(event: dict[str, Any], invoices: InvoiceService, store: InMemoryEventStore = DEFAULT_STORE) -> str:\n"
        '    if store.seen(event["id"]):\n        return "duplicate"\n    store.add(event["id"])\n'
    )
    [r25] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/src/app/payments/webhooks.py",
            old_string=old_h,
            new_string=new_h,
        )
    )
    msg, tur = _cc_edit_result(wh, "src/app/payments/webhooks.py", old_h, new_h)
    cc.result(r25, msg, tur)
    [r26] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/tests/payments/conftest.py",
            old_string="@pytest.fixture\ndef respx_mock():",
            new_string="@pytest.fixture(autouse=True)\ndef _fresh_event_store():\n    DEFAULT_STORE.clear()\n    yield\n    DEFAULT_STORE.clear()\n\n\n@pytest.fixture\ndef respx_mock():",
        )
    )
    cc.result(
        r26,
        f"The file {CWD}/tests/payments/conftest.py has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     5→@pytest.fixture(autouse=True)\n     6→def _fresh_event_store():\n     7→    DEFAULT_STORE.clear()\n     8→    yield\n     9→    DEFAULT_STORE.clear()",
        {
            "filePath": f"{CWD}/tests/payments/conftest.py",
            "oldString": "@pytest.fixture\ndef respx_mock():",
            "newString": "@pytest.fixture(autouse=True)\ndef _fresh_event_store(): ...",
            "originalFile": "",
            "structuredPatch": [],
            "userModified": False,
            "replaceAll": False,
        },
    )
    [r27] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/tests/payments/conftest.py",
            old_string="import pytest\nimport respx\n",
            new_string="import pytest\nimport respx\n\nfrom app.payments.webhooks import DEFAULT_STORE\n",
        )
    )
    cc.result(
        r27,
        f"The file {CWD}/tests/payments/conftest.py has been updated.",
        {
            "filePath": f"{CWD}/tests/payments/conftest.py",
            "oldString": "import pytest\nimport respx\n",
            "newString": "import pytest\nimport respx\n\nfrom app.payments.webhooks import DEFAULT_STORE\n",
            "originalFile": "",
            "structuredPatch": [],
            "userModified": False,
            "replaceAll": False,
        },
    )
    [r28] = cc.assistant(
        text("Running the reproducing seed plus 20 random orders."),
        tool(
            "Bash",
            command="for s in 3127904561 $(seq 1 20); do python -m pytest -q -p randomly -p randomly_seed=$s tests/payments/test_webhooks.py | tail -n 1; done | sort | uniq -c",
            description="Check order independence",
        ),
    )
    out = "     21 22 passed in 0.4s"
    cc.result(r28, out, _bash(out))
    [r29] = cc.assistant(
        tool(
            "Bash",
            command="python -m pytest -q && ruff check src tests",
            description="Full suite and lint",
        )
    )
    out = (
        "\n".join("".ljust(72, ".") + f" [{p:>3}%]" for p in (20, 40, 60, 80))
        + "\n"
        + "".ljust(71, ".")
        + " [100%]\n359 passed, 2 skipped in 10.37s\nAll checks passed!"
    )
    cc.result(r29, out, _bash(out))
    cc.assistant(
        text(
            "Fixed properly: dedupe state lives in an `InMemoryEventStore` (`DEFAULT_STORE`), injectable into `handle_event`, and an autouse fixture clears it around every payments test. The #431 seed and 20 random orders all pass; full suite and lint are green. #419 can later swap in its Postgres store through the same interface."
        )
    )
    cc.compact("manual", 98_000, CC_MANUAL_SUMMARY)
    cc.prompt(
        "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.",
        isMeta=True,
    )
    cc.prompt(
        "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args>focus on the payments changes</command-args>"
    )
    cc.prompt(
        "<local-command-stdout>\u001b[2mCompacted (ctrl+o to see full summary)\u001b[22m</local-command-stdout>"
    )

    # -------------------------------------------------------------- segment C
    snap_msg = cc.prompt("Write a PR description for both changes.")
    cc.snapshot(
        snap_msg,
        {
            "src/app/payments/client.py": 2,
            "src/app/payments/webhooks.py": 1,
            "tests/payments/conftest.py": 1,
        },
    )
    [r30] = cc.assistant(
        tool(
            "Bash",
            command="git log --oneline main..HEAD; git diff --stat main",
            description="Summarise branch changes",
        )
    )
    out = (
        " src/app/payments/client.py          | 18 ++++++++++++++----\n src/app/payments/webhooks.py        | 28 +++++++++++++++++++++++-----\n"
        " tests/payments/conftest.py          |  9 +++++++++\n tests/payments/test_idempotency.py  | 34 ++++++++++++++++++++++++++++++++++\n"
        " 4 files changed, 82 insertions(+), 7 deletions(-)"
    )
    cc.result(r30, out, _bash(out))
    cc.assistant(
        text(
            "## Idempotent payment retries; order-independent webhook dedupe\n\n"
            "### Why\n- A retry after a lost response could create a second charge: retried POSTs carried no `Idempotency-Key`.\n"
            "- `test_duplicate_events_are_ignored` failed depending on test order (#431) because dedupe state was a module-level set.\n\n"
            "### What\n- `PaymentsClient._post_with_retries` requires an idempotency key and sends it on every attempt. `charge` keys on "
            "invoice, minor amount and currency; `refund` on charge and amount. Same `sha256(kind:parts)[:32]` scheme as billing-worker.\n"
            "- `app.payments.webhooks`: dedupe goes through an `InMemoryEventStore` (`DEFAULT_STORE`), injectable into `handle_event`; "
            "tests reset it with an autouse fixture. #419 can plug its Postgres store into the same interface.\n\n"
            "### Tests\n- New `tests/payments/test_idempotency.py` (retry reuses the key; keys differ across invoices and between charge/refund).\n"
            "- #431 seed and 20 random orders pass; full suite: 359 passed, 2 skipped.\n\nCloses #431."
        )
    )
    cc.finish(24_300)
    cc.lines.insert(
        0,
        {
            "type": "summary",
            "summary": "Idempotent payment retries and webhook dedupe fix",
            "leafUuid": cc.tip,
        },
    )

    write_text(
        out_dir / "claude-code.jsonl", "\n".join(dumps_compact(line) for line in cc.lines) + "\n"
    )
    return {
        "format": "claude-code",
        "rule": "Follow parentUuid back from the newest leaf; at a compact_boundary (parentUuid null) continue through "
        "logicalParentUuid, so the whole main-chain history is kept. Assistant lines sharing (message.id, requestId) "
        "merge into one assistant message. Each tool_result block becomes one tool message. Every other main-chain user "
        "line is one user message: prompts, the isCompactSummary summaries, isMeta caveats and <command-name>/"
        "<local-command-stdout> lines (injected). Not messages: compact_boundary lines, the summary title line, "
        "file-history-snapshot lines, isSidechain lines and the abandoned rewind branch. A compaction's index is the "
        "position of its isCompactSummary message. Usage: one entry per merged main-chain assistant message; prompt = "
        "input + cache_creation + cache_read.",
        "messages": len(cc.roles),
        "roles": role_counts(cc.roles),
        "tool_calls": cc.tool_calls,
        "tool_results": cc.roles.count("tool"),
        "compactions": cc.compactions,
        "images": cc.images,
        "model": CC_MODEL,
        "session_id": session,
        "lines": len(cc.lines),
        "injected_user_messages": cc.injected,
        # The sidechain lines above all belong to one subagent.
        "subagents": ["a7c2e91f"],
        "excluded": {
            "sidechain_messages": cc.excluded["sidechain"],
            "sidechain_lines": cc.excluded_lines["sidechain"],
            "abandoned_branch_messages": cc.excluded["abandoned"],
            "abandoned_branch_lines": cc.excluded_lines["abandoned"],
        },
        "usage_turns": len(cc.main_prompts),
        "prompt_tokens": {
            "first": cc.main_prompts[0],
            "peak": max(cc.main_prompts),
            "last": cc.main_prompts[-1],
        },
        "live_messages_after_last_compaction": len(cc.roles) - cc.compactions[-1]["index"],
    }
