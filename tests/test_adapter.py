"""The PyTorch adapter's side of the protocol, runnable without torch or a GPU: request
parsing, and the 'absent' answer where torch cannot be imported or sees no GPU. Where
torch and a GPU exist, `fabench vendors` on a GPU machine is the end-to-end test."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = os.path.join(HERE, "..", "vendors", "torch", "adapter.py")
sys.path.insert(0, os.path.dirname(ADAPTER))
import adapter  # noqa: E402

REQ = ("run impl=torch-flash dtype=bf16 b=4 hq=32 hkv=8 sq=1 skv=4096 d=128 causal=1 q=/t/q k=/t/k v=/t/v "
       "o=/t/o warmup=0.05 budget=0.3 min_reps=5 max_reps=1000")


class Protocol(unittest.TestCase):
    def test_parse_request(self):
        r = adapter.parse_request(REQ)
        self.assertEqual(r["impl"], "torch-flash")
        self.assertEqual((r["b"], r["hq"], r["hkv"], r["sq"], r["skv"], r["d"], r["causal"]), (4, 32, 8, 1, 4096, 128, 1))
        self.assertEqual(r["budget"], 0.3)
        self.assertEqual(r["o"], "/t/o")

    def test_bad_requests(self):
        for bad in ("", "go impl=x", REQ.replace(" d=128", ""), REQ.replace("b=4", "b=four"), REQ + " stray"):
            with self.assertRaises(ValueError):
                adapter.parse_request(bad)

    def test_serve_answers_hello_or_absent(self):
        p = subprocess.run([sys.executable, ADAPTER, "--serve", "--device", "0"], input="quit\n",
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        first = p.stdout.splitlines()[0]
        try:
            import torch
            gpu = torch.cuda.is_available()
        except Exception:
            gpu = False
        if gpu:
            self.assertTrue(first.startswith("hello "), first)
        else:
            self.assertTrue(first.startswith("absent reason="), first)

    def test_usage_without_serve(self):
        p = subprocess.run([sys.executable, ADAPTER], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("line protocol", p.stderr)


if __name__ == "__main__":
    unittest.main()
