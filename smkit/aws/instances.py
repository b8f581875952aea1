"""The ML instance catalogue: the types SageMaker hosts endpoints on, and the hardware of each.

Which types exist comes from AWS's own API model (botocore's ``ProductionVariantInstanceType`` enum, one list
for every region); the hardware of each comes from the cited table in :mod:`smkit.aws.instance_table`. Config
rules, the constructs, the local endpoint, batch and the emulator ask here; nothing else spells an instance
type's pattern or hardware.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from smkit.aws.instance_table import (
    ACCELERATED_FAMILIES,
    CPU_FAMILIES,
    SIZE_EXCEPTIONS,
    SIZE_VCPUS,
)

# The shape of an ML instance type name: ``ml.<family>.<size>``, the family possibly hyphenated
# (ml.p6-b200.48xlarge). Whether the type exists is :func:`hosting_instance_types`'s question.
INSTANCE_TYPE = r"^ml\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+$"
INSTANCE_TYPE_RE = re.compile(INSTANCE_TYPE)
INSTANCE_TYPE_HINT = "an ml.* instance type such as ml.m5.large"
CPU = "CPU"
NVIDIA_GPU = "NVIDIA GPU"
NEURON = "Neuron"
# ProductionVariant.VolumeSizeInGB: "Currently only Amazon EBS gp2 storage volumes are supported." Instance types
# with local NVMe storage have no EBS ML storage volume, so CreateEndpointConfig refuses a size for them (AWS's
# own SDK drops the setting for these families).
VARIANT_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html"
EBS_ONLY = "Currently only Amazon EBS gp2 storage volumes are supported"
# Burstable families (ml.t2, ml.t3, ...) by their name: the t family of any generation.
_BURSTABLE_FAMILY = re.compile(r"^t\d+[a-z]*$")


@dataclass(frozen=True)
class Instance:
    """One ML instance type's hardware.

    accelerator: ``CPU``, ``NVIDIA GPU``, ``Neuron`` (Inferentia, Trainium) or ``Gaudi``; accelerators: how
    many devices; accelerator_memory_gb: their memory together (None: not in the table); storage_gb: local
    NVMe instance storage (0: EBS only; None: not in the table); instance_storage: whether it has any (None:
    not in the table).
    """

    name: str
    family: str
    size: str
    vcpus: int
    memory_gib: float
    accelerator: str = CPU
    device: str | None = None
    accelerators: int = 0
    accelerator_memory_gb: int | None = 0
    storage_gb: int | None = 0
    instance_storage: bool | None = False
    burstable: bool = False

    @property
    def memory_mib(self) -> int:
        return int(self.memory_gib * 1024)

    @property
    def gpus(self) -> int:
        """NVIDIA GPUs (what CUDA engines, and their tensor parallelism, can use)."""
        return self.accelerators if self.accelerator == NVIDIA_GPU else 0

    @property
    def gpu_memory_gb(self) -> int | None:
        """GPU memory of all GPUs together, GB (None: not in the table; 0: no GPU)."""
        return self.accelerator_memory_gb if self.accelerator == NVIDIA_GPU else 0


def split(instance_type: str) -> tuple[str, str] | None:
    """``(family, size)`` of ``ml.<family>.<size>``, or None when ``instance_type`` has not that shape."""
    if not INSTANCE_TYPE_RE.match(instance_type):
        return None
    _, family, size = instance_type.split(".", 2)
    return family, size


def instance(instance_type: str) -> Instance | None:
    """The hardware of ``instance_type``, or None when the table has no row for it."""
    parts = split(instance_type)
    if parts is None:
        return None
    family, size = parts
    accelerated = ACCELERATED_FAMILIES.get(family)
    if accelerated is not None:
        row = accelerated.sizes.get(size)
        if row is None:
            return None
        per_device = accelerated.accelerator.memory_gb
        return Instance(
            name=instance_type,
            family=family,
            size=size,
            vcpus=row.vcpus,
            memory_gib=row.memory_gib,
            accelerator=accelerated.accelerator.kind,
            device=accelerated.accelerator.device,
            accelerators=row.devices,
            accelerator_memory_gb=None if per_device is None else per_device * row.devices,
            storage_gb=row.storage_gb,
            instance_storage=row.has_storage,
        )
    cpu = CPU_FAMILIES.get(family)
    if cpu is None or size not in SIZE_VCPUS:
        return None
    vcpus, memory = SIZE_EXCEPTIONS.get(
        instance_type, (SIZE_VCPUS[size], SIZE_VCPUS[size] * cpu.memory_per_vcpu)
    )
    storage = cpu.storage_gb.get(size, 0)
    return Instance(
        name=instance_type,
        family=family,
        size=size,
        vcpus=vcpus,
        memory_gib=memory,
        storage_gb=storage,
        instance_storage=storage > 0,
        burstable=cpu.burstable,
    )


@functools.cache
def hosting_instance_types() -> frozenset[str]:
    """The instance types SageMaker hosts endpoints on: botocore's model of ``ProductionVariantInstanceType``
    (the SageMaker API's own enum; one list for every region, so a type a region lacks passes here and fails at
    CreateEndpointConfig). The emulator checks against the same list."""
    from smkit.aws.service_models import shape

    return frozenset(shape("sagemaker", "ProductionVariantInstanceType").enum)


def catalogue() -> dict[str, Instance | None]:
    """Every hosting instance type and its hardware (None: no row in the table)."""
    return {name: instance(name) for name in sorted(hosting_instance_types())}


def accelerator(instance_type: str) -> str:
    """``NVIDIA GPU``, ``Neuron``, ``Gaudi`` or ``CPU``: what an image for ``instance_type`` is built for
    (decided by the family, so a size the table lacks still has its family's kind)."""
    parts = split(instance_type)
    family = ACCELERATED_FAMILIES.get(parts[0]) if parts else None
    return CPU if family is None else family.accelerator.kind


def is_accelerated(instance_type: str) -> bool:
    """Whether ``instance_type`` has a GPU or an AWS accelerator (which a CPU-only image cannot use)."""
    return accelerator(instance_type) != CPU


def is_burstable(instance_type: str) -> bool:
    """Whether ``instance_type`` is a burstable ml.t* type (which Application Auto Scaling cannot scale)."""
    parts = split(instance_type)
    return parts is not None and bool(_BURSTABLE_FAMILY.match(parts[0]))


def has_instance_storage(instance_type: str) -> bool:
    """Whether ``instance_type`` has local NVMe instance storage, so SageMaker gives it no EBS ML storage
    volume (no ``VolumeSizeInGB``, no volume ``KmsKeyId``). False when the table does not say."""
    found = instance(instance_type)
    return found is not None and found.instance_storage is True


def volume_message(instance_type: str) -> str:
    """Why ``VolumeSizeInGB`` is refused for ``instance_type`` (one with instance storage), and the fix."""
    return (
        f"{instance_type} has local NVMe instance storage and no EBS volume to size (VolumeSizeInGB: "
        f'"{EBS_ONLY}"); remove volume_size_gb, the instance\'s own storage holds the model '
        f"({VARIANT_URL})"
    )
