"""This repository's own CDK app, built only from :mod:`smkit.cdk`'s public API, as your repository's would be."""
