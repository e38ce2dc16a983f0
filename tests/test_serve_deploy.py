"""The deployment examples (deploy/): they parse, agree with each other, and load as docsan configuration."""

from __future__ import annotations

from pathlib import Path

import yaml

from docsan.config import load_config
from docsan.runner.tiers import build_tiers

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def test_kubernetes_manifest_has_the_gateway_and_one_gpu_vllm_per_tier() -> None:
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text(encoding="utf-8")))
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    config_map = by[("ConfigMap", "docsan-config")]["data"]["docsan.toml"]
    assert config_map == (DEPLOY / "docsan.toml").read_text(encoding="utf-8")
    gateway = by[("Deployment", "docsan-gateway")]["spec"]
    assert gateway["replicas"] == 1  # one ledger per set of tiers
    probes = gateway["template"]["spec"]["containers"][0]
    assert probes["readinessProbe"]["httpGet"]["path"] == "/ready"
    tiers = build_tiers(load_config(DEPLOY / "docsan.toml").runner.tiers)
    for name, tier in tiers.items():
        host = tier.base_url.split("//")[1].split(":")[0]
        assert ("Service", host) in by, f"tier {name}: no Service {host}"
        pod = by[("Deployment", host)]["spec"]["template"]["spec"]["containers"][0]
        assert pod["resources"]["limits"] == {"nvidia.com/gpu": 1}
        assert "--max-model-len" in pod["args"]
        assert int(pod["args"][pod["args"].index("--max-model-len") + 1]) == tier.engine.max_model_len


def test_compose_file_runs_the_same_tiers() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    tiers = build_tiers(load_config(DEPLOY / "docsan.toml").runner.tiers)
    cards = set()
    for tier in tiers.values():
        host = tier.base_url.split("//")[1].split(":")[0]
        device = services[host]["deploy"]["resources"]["reservations"]["devices"][0]
        assert device["driver"] == "nvidia"
        cards.update(device["device_ids"])
    assert len(cards) == len(tiers)  # a card per tier, none shared
    assert "/etc/docsan/docsan.toml" in services["gateway"]["command"]
    assert load_config(DEPLOY / "docsan.toml").serve.host == "0.0.0.0"  # reachable from the other containers
