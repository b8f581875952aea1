"""AWS facts: the bottom layer every other part of smkit reads AWS's numbers from.

- :mod:`smkit.aws.instances`: the ML instance catalogue (which types SageMaker hosts on, from botocore's
  model; each one's vCPUs, memory, accelerators, accelerator memory and instance storage, from
  :mod:`smkit.aws.instance_table`'s cited table) and the one pattern of an instance type's name.
- :mod:`smkit.aws.limits`: service limits, each with its source (botocore's model or AWS's page).
- :mod:`smkit.aws.service_models`: reads botocore's service models (enums, ranges, patterns, documentation).

It imports nothing else of smkit. No other module defines an instance-type pattern, an instance hardware
table or an AWS limit (tests/aws/test_one_place.py scans for them).
"""
