"""The hardware of each ML instance family: one table, from AWS's published instance specifications.

Sources (numbers as AWS publishes them; GiB for memory, GB for accelerator memory and instance storage):

- SageMaker AI pricing, "Instance details" per ML instance type: https://aws.amazon.com/sagemaker/pricing/
- EC2 general purpose, compute and memory optimized specifications (vCPUs, memory, instance store volumes):
  https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html,
  https://docs.aws.amazon.com/ec2/latest/instancetypes/co.html,
  https://docs.aws.amazon.com/ec2/latest/instancetypes/mo.html
- EC2 accelerated computing specifications (GPUs, GPU memory, Inferentia/Trainium/Gaudi accelerators,
  instance store volumes): https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html
- Which hosting instance types have local NVMe instance storage (and so no EBS ML storage volume):
  https://docs.aws.amazon.com/sagemaker/latest/dg/host-instance-storage.html
- ml.g7e and ml.g7, which those pages did not list when the rows were written: ml.g7e's vCPUs, memory and GPU
  count are AWS's own SageMaker HyperPod CLI's (https://github.com/aws/sagemaker-hyperpod-cli,
  src/sagemaker/hyperpod/training/constants.py, INSTANCE_RESOURCES); its GPU memory is NVIDIA's for the RTX PRO
  6000 Blackwell Server Edition (96 GB,
  https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/). ml.g7's rows come from a
  third-party listing (the Kubernetes cluster autoscaler's, https://github.com/kubernetes/autoscaler/issues/9854)
  and NVIDIA's RTX PRO 4500 Blackwell (32 GB); no AWS page or AWS repository gave them. Neither family's
  instance storage is known.

A value AWS's pages do not give for a type is None here ("not in the table"); checks that need it say what
they could not check.

Which types SageMaker hosts on is not decided here: botocore's ``ProductionVariantInstanceType`` enum is that
list (:func:`smkit.aws.instances.hosting_instance_types`); a test checks every type of it has a row here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

URL = "https://aws.amazon.com/sagemaker/pricing/"
EC2_ACCELERATED_URL = "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html"

# Regular sizes of the general purpose (m), compute optimized (c) and memory optimized (r) families: vCPUs per
# size name. ``N xlarge`` has 4N vCPUs.
SIZE_VCPUS: Mapping[str, int] = {
    "medium": 1,
    "large": 2,
    "xlarge": 4,
    **{f"{n}xlarge": 4 * n for n in (2, 4, 8, 9, 10, 12, 16, 18, 24, 32, 48)},
}


@dataclass(frozen=True)
class Accelerator:
    """The accelerator of a family: its kind and the memory of one device (GB; None: not in the table)."""

    kind: str  # "NVIDIA GPU", "Neuron" (Inferentia, Trainium) or "Gaudi"
    device: str
    memory_gb: int | None


@dataclass(frozen=True)
class Size:
    """One size of an accelerated family: vCPUs, memory GiB, devices, and its instance storage: ``storage_gb``
    (0: EBS only; None: not in the table) and ``has_storage`` (None: as ``storage_gb`` says)."""

    vcpus: int
    memory_gib: float
    devices: int
    storage_gb: int | None
    has_storage: bool | None = None

    def __post_init__(self) -> None:
        if self.has_storage is None and self.storage_gb is not None:
            object.__setattr__(self, "has_storage", self.storage_gb > 0)


@dataclass(frozen=True)
class CpuFamily:
    """A family without accelerators: memory GiB per vCPU and instance storage GB per size (empty: EBS only)."""

    memory_per_vcpu: float
    storage_gb: Mapping[str, int]
    burstable: bool = False


@dataclass(frozen=True)
class AcceleratedFamily:
    accelerator: Accelerator
    sizes: Mapping[str, Size]


# Instance store volumes (total GB) of the "d" families, per size.
_M5D = {"large": 75, "xlarge": 150, "2xlarge": 300, "4xlarge": 600, "12xlarge": 1800, "24xlarge": 3600}
_C5D = {"large": 50, "xlarge": 100, "2xlarge": 200, "4xlarge": 400, "9xlarge": 900, "18xlarge": 1800}
_GRAVITON_D = {
    "medium": 59,
    "large": 118,
    "xlarge": 237,
    "2xlarge": 474,
    "4xlarge": 950,
    "8xlarge": 1900,
    "12xlarge": 2850,
    "16xlarge": 3800,
}
_EBS: Mapping[str, int] = {}

CPU_FAMILIES: Mapping[str, CpuFamily] = {
    "t2": CpuFamily(4, _EBS, burstable=True),
    "m4": CpuFamily(4, _EBS),
    "m5": CpuFamily(4, _EBS),
    "m5d": CpuFamily(4, _M5D),
    "m6i": CpuFamily(4, _EBS),
    "m6g": CpuFamily(4, _EBS),
    "m6gd": CpuFamily(4, _GRAVITON_D),
    "m7i": CpuFamily(4, _EBS),
    "m8g": CpuFamily(4, _EBS),
    "c4": CpuFamily(1.875, _EBS),
    "c5": CpuFamily(2, _EBS),
    "c5d": CpuFamily(2, _C5D),
    "c6i": CpuFamily(2, _EBS),
    "c6in": CpuFamily(2, _EBS),
    "c6g": CpuFamily(2, _EBS),
    "c6gd": CpuFamily(2, _GRAVITON_D),
    "c6gn": CpuFamily(2, _EBS),
    "c7g": CpuFamily(2, _EBS),
    "c7i": CpuFamily(2, _EBS),
    "c8g": CpuFamily(2, _EBS),
    "r5": CpuFamily(8, _EBS),
    "r5d": CpuFamily(8, _M5D),
    "r6i": CpuFamily(8, _EBS),
    "r6g": CpuFamily(8, _EBS),
    "r6gd": CpuFamily(8, _GRAVITON_D),
    "r7gd": CpuFamily(8, _GRAVITON_D),
    "r7i": CpuFamily(8, _EBS),
    "r8g": CpuFamily(8, _EBS),
}
# Types whose (vCPUs, memory GiB) differ from SIZE_VCPUS and their family's memory per vCPU.
SIZE_EXCEPTIONS: Mapping[str, tuple[int, float]] = {"ml.t2.medium": (2, 4), "ml.c4.8xlarge": (36, 60)}


def _sizes(rows: Mapping[str, tuple[int, float, int, int | None]]) -> Mapping[str, Size]:
    return {name: Size(*row) for name, row in rows.items()}


# size: (vCPUs, memory GiB, devices, instance storage GB)
ACCELERATED_FAMILIES: Mapping[str, AcceleratedFamily] = {
    "p2": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "K80", 12),
        _sizes({"xlarge": (4, 61, 1, 0), "8xlarge": (32, 488, 8, 0), "16xlarge": (64, 732, 16, 0)}),
    ),
    "p3": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "V100", 16),
        _sizes({"2xlarge": (8, 61, 1, 0), "8xlarge": (32, 244, 4, 0), "16xlarge": (64, 488, 8, 0)}),
    ),
    "g4dn": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "T4", 16),
        _sizes(
            {
                "xlarge": (4, 16, 1, 125),
                "2xlarge": (8, 32, 1, 225),
                "4xlarge": (16, 64, 1, 225),
                "8xlarge": (32, 128, 1, 900),
                "12xlarge": (48, 192, 4, 900),
                "16xlarge": (64, 256, 1, 900),
            }
        ),
    ),
    "g5": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "A10G", 24),
        _sizes(
            {
                "xlarge": (4, 16, 1, 250),
                "2xlarge": (8, 32, 1, 450),
                "4xlarge": (16, 64, 1, 600),
                "8xlarge": (32, 128, 1, 900),
                "12xlarge": (48, 192, 4, 3800),
                "16xlarge": (64, 256, 1, 1900),
                "24xlarge": (96, 384, 4, 3800),
                "48xlarge": (192, 768, 8, 7600),
            }
        ),
    ),
    "g6": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "L4", 24),
        _sizes(
            {
                "xlarge": (4, 16, 1, 250),
                "2xlarge": (8, 32, 1, 450),
                "4xlarge": (16, 64, 1, 600),
                "8xlarge": (32, 128, 1, 900),
                "12xlarge": (48, 192, 4, 3760),
                "16xlarge": (64, 256, 1, 1880),
                "24xlarge": (96, 384, 4, 3760),
                "48xlarge": (192, 768, 8, 7520),
            }
        ),
    ),
    "g6e": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "L40S", 48),
        _sizes(
            {
                "xlarge": (4, 32, 1, 250),
                "2xlarge": (8, 64, 1, 450),
                "4xlarge": (16, 128, 1, 600),
                "8xlarge": (32, 256, 1, 900),
                "12xlarge": (48, 384, 4, 3800),
                "16xlarge": (64, 512, 1, 1900),
                "24xlarge": (96, 768, 4, 3800),
                "48xlarge": (192, 1536, 8, 7600),
            }
        ),
    ),
    "g7": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "RTX PRO 4500 Blackwell", 32),
        _sizes(
            {
                "2xlarge": (8, 32, 1, None),
                "4xlarge": (16, 64, 1, None),
                "8xlarge": (32, 128, 2, None),
                "12xlarge": (48, 192, 4, None),
                "24xlarge": (96, 384, 4, None),
                "48xlarge": (192, 768, 8, None),
            }
        ),
    ),
    "g7e": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "RTX PRO 6000 Blackwell", 96),
        _sizes(
            {
                "2xlarge": (8, 64, 1, None),
                "4xlarge": (16, 128, 1, None),
                "8xlarge": (32, 256, 1, None),
                "12xlarge": (48, 512, 2, None),
                "24xlarge": (96, 1024, 4, None),
                "48xlarge": (192, 2048, 8, None),
            }
        ),
    ),
    "p4d": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "A100", 40), _sizes({"24xlarge": (96, 1152, 8, 8000)})
    ),
    "p4de": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "A100", 80), _sizes({"24xlarge": (96, 1152, 8, 8000)})
    ),
    "p5": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "H100", 80),
        _sizes({"4xlarge": (16, 256, 1, 3840), "48xlarge": (192, 2048, 8, 30720)}),
    ),
    "p5e": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "H200", 141), _sizes({"48xlarge": (192, 2048, 8, 30720)})
    ),
    "p5en": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "H200", 141), _sizes({"48xlarge": (192, 2048, 8, 30720)})
    ),
    "p6-b200": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "B200", 179), _sizes({"48xlarge": (192, 2048, 8, 30720)})
    ),
    "p6-b300": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "B300", None), _sizes({"48xlarge": (192, 4096, 8, None)})
    ),
    "p6e-gb200": AcceleratedFamily(
        Accelerator("NVIDIA GPU", "B200 (GB200)", 185),
        {"36xlarge": Size(144, 960, 4, None, has_storage=True)},
    ),
    "inf1": AcceleratedFamily(
        Accelerator("Neuron", "Inferentia", 8),
        _sizes(
            {
                "xlarge": (4, 8, 1, 0),
                "2xlarge": (8, 16, 1, 0),
                "6xlarge": (24, 48, 4, 0),
                "24xlarge": (96, 192, 16, 0),
            }
        ),
    ),
    "inf2": AcceleratedFamily(
        Accelerator("Neuron", "Inferentia2", 32),
        _sizes(
            {
                "xlarge": (4, 16, 1, 0),
                "8xlarge": (32, 128, 1, 0),
                "24xlarge": (96, 384, 6, 0),
                "48xlarge": (192, 768, 12, 0),
            }
        ),
    ),
    "trn1": AcceleratedFamily(
        Accelerator("Neuron", "Trainium", 32),
        _sizes({"2xlarge": (8, 32, 1, 474), "32xlarge": (128, 512, 16, 7600)}),
    ),
    "trn1n": AcceleratedFamily(
        Accelerator("Neuron", "Trainium", 32), _sizes({"32xlarge": (128, 512, 16, 7600)})
    ),
    "trn2": AcceleratedFamily(
        Accelerator("Neuron", "Trainium2", 96), _sizes({"48xlarge": (192, 2048, 16, 7600)})
    ),
    "dl1": AcceleratedFamily(Accelerator("Gaudi", "Gaudi", 32), _sizes({"24xlarge": (96, 768, 8, 4000)})),
}
