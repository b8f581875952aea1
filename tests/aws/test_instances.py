"""The instance catalogue: every type SageMaker hosts on has its hardware, and the table reads as AWS's does."""

from __future__ import annotations

import pytest

from smkit.aws.instances import (
    INSTANCE_TYPE_RE,
    accelerator,
    catalogue,
    has_instance_storage,
    hosting_instance_types,
    instance,
    is_burstable,
)


def test_every_hosting_type_has_a_row() -> None:
    rows = catalogue()
    assert len(rows) == len(hosting_instance_types()) > 200
    assert [name for name, row in rows.items() if row is None] == []
    assert all(INSTANCE_TYPE_RE.match(name) for name in rows)


@pytest.mark.parametrize(
    "name,vcpus,memory_gib,kind,devices,device_memory_gb",
    [
        ("ml.m5.large", 2, 8, "CPU", 0, 0),
        ("ml.c5.9xlarge", 36, 72, "CPU", 0, 0),
        ("ml.r6i.32xlarge", 128, 1024, "CPU", 0, 0),
        ("ml.t2.medium", 2, 4, "CPU", 0, 0),
        ("ml.c4.8xlarge", 36, 60, "CPU", 0, 0),
        ("ml.m8g.medium", 1, 4, "CPU", 0, 0),
        ("ml.g4dn.xlarge", 4, 16, "NVIDIA GPU", 1, 16),
        ("ml.g5.12xlarge", 48, 192, "NVIDIA GPU", 4, 96),
        ("ml.g6e.xlarge", 4, 32, "NVIDIA GPU", 1, 48),
        ("ml.p4d.24xlarge", 96, 1152, "NVIDIA GPU", 8, 320),
        ("ml.p5.48xlarge", 192, 2048, "NVIDIA GPU", 8, 640),
        ("ml.inf2.24xlarge", 96, 384, "Neuron", 6, 192),
        ("ml.trn1.32xlarge", 128, 512, "Neuron", 16, 512),
    ],
)
def test_hardware_of_known_types(
    name: str, vcpus: int, memory_gib: float, kind: str, devices: int, device_memory_gb: int
) -> None:
    row = instance(name)
    assert row is not None
    assert (row.vcpus, row.memory_gib, row.accelerator, row.accelerators) == (
        vcpus,
        memory_gib,
        kind,
        devices,
    )
    assert row.accelerator_memory_gb == device_memory_gb
    assert row.gpus == (devices if kind == "NVIDIA GPU" else 0)


def test_what_the_table_does_not_give_is_none_not_a_guess() -> None:
    b300 = instance("ml.p6-b300.48xlarge")
    assert b300 is not None and b300.gpus == 8 and b300.gpu_memory_gb is None
    g7e = instance("ml.g7e.2xlarge")
    assert g7e is not None and g7e.storage_gb is None and g7e.instance_storage is None
    assert not has_instance_storage("ml.g7e.2xlarge")  # not claimed without AWS's word


def test_unknown_names_have_no_row() -> None:
    assert instance("ml.m5.3xlarge") is None
    assert instance("m5.large") is None
    assert instance("ml.zz9.large") is None


def test_kinds_by_family() -> None:
    assert accelerator("ml.g5.xlarge") == "NVIDIA GPU"
    assert accelerator("ml.p6-b200.48xlarge") == "NVIDIA GPU"
    assert accelerator("ml.inf1.xlarge") == "Neuron"
    assert accelerator("ml.dl1.24xlarge") == "Gaudi"
    assert accelerator("ml.m5.large") == "CPU"
    assert (
        is_burstable("ml.t2.medium") and is_burstable("ml.t3.large") and not is_burstable("ml.trn1.2xlarge")
    )
