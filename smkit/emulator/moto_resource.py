"""What every CloudFormation resource the emulator adds to moto shares: the hooks moto's CloudFormation calls.

moto finds a resource type through ``CloudFormationModel.__subclasses__()`` (direct subclasses only), so a
resource class derives from :class:`EmulatedResource` *and* moto's ``CloudFormationModel``, in that order:
this mixin answers moto's hooks from three class attributes and three short methods, so each resource
says only what differs (its type, the property that names it, its ``Fn::GetAtt`` attributes, and how it
is created, updated and deleted through moto's own backend). A ``Custom::*`` type, which moto's CloudFormation
never looks up among its models, is routed to its class by :func:`route_custom_type`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar


class EmulatedResource:
    """moto's ``CloudFormationModel`` hooks, from ``CFN_TYPE``, ``NAME_TYPE`` and ``ATTRIBUTES``.

    A subclass implements :meth:`create` (the resource's properties -> an instance), and :meth:`update`
    (default: :meth:`create` again under the new name) and :meth:`remove` (default: nothing) where they
    differ; :meth:`attribute` answers ``Fn::GetAtt`` for the names in ``ATTRIBUTES``.
    """

    CFN_TYPE: ClassVar[str]
    NAME_TYPE: ClassVar[str] = ""  # the property that names the resource ("": CloudFormation names it)
    ATTRIBUTES: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # moto's model metaclass files every model under the service its module path names
        # (``moto.<service>.models``); an ``AWS::<Service>::<Type>`` resource is filed under that service,
        # read from CFN_TYPE (this runs inside the class's creation, before the metaclass reads the path).
        super().__init_subclass__(**kwargs)
        namespace, _, rest = cls.__dict__.get("CFN_TYPE", "").partition("::")
        if namespace == "AWS":
            cls.__module__ = f"moto.{rest.partition('::')[0].lower()}.models"

    @classmethod
    def cloudformation_type(cls) -> str:
        return cls.CFN_TYPE

    @classmethod
    def cloudformation_name_type(cls) -> str:
        return cls.NAME_TYPE

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in cls.ATTRIBUTES

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

        if attribute_name in self.ATTRIBUTES:
            return self.attribute(attribute_name)
        raise UnformattedGetAttTemplateException()

    if TYPE_CHECKING:
        # What each resource defines (moto's metaclass is not ABCMeta, so these are declared for the type
        # checker only): ``attribute`` where it has ``ATTRIBUTES``, ``create`` always.

        def attribute(self, name: str) -> Any:
            """The value of ``Fn::GetAtt`` ``name`` (one of ``ATTRIBUTES``)."""

        @classmethod
        def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Any:
            """The resource ``name`` with ``properties``, made through moto's backend."""

    @classmethod
    def create_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        return cls.create(resource_name, cloudformation_json["Properties"], account_id, region_name)

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> Any:
        properties = cloudformation_json["Properties"]
        return cls.update(original_resource, new_resource_name, properties, account_id, region_name)

    @classmethod
    def delete_from_cloudformation_json(
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        cls.remove(resource_name, account_id, region_name)

    @classmethod
    def update(
        cls, original: Any, name: str, properties: dict[str, Any], account_id: str, region_name: str
    ) -> Any:
        """An update; by default the resource is made again under ``name``."""
        return cls.create(name, properties, account_id, region_name)

    @classmethod
    def remove(cls, physical_id: str, account_id: str, region_name: str) -> None:
        """Remove the resource whose physical id is ``physical_id``; by default nothing."""


def route_custom_type(resource: type[EmulatedResource]) -> None:
    """Have moto's CloudFormation create ``resource.CFN_TYPE`` (a ``Custom::*`` type) with ``resource``.

    Applied after the fix that leaves every other custom resource uncreated
    (:func:`smkit.emulator.moto_engine.custom_resources_not_run`), which it answers first.
    """
    from moto.cloudformation import parsing

    original = parsing.resource_class_from_type

    def resource_class_from_type(resource_type: str) -> Any:
        if resource_type == resource.CFN_TYPE:
            return resource
        return original(resource_type)

    parsing.resource_class_from_type = resource_class_from_type
