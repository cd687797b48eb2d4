//! The Go struct layout of core/v1 `PodTemplateSpec` in Kubernetes 1.33 (k8s.io/api v0.33.9)
//! and every type it reaches: fields in declaration order, Go type names, JSON keys. Generated
//! by `scripts/go-layout/main.go` (see its header); do not edit by hand.

use super::{Field, GoType};

static T_BIG_INT: GoType = GoType::Struct(
    "big.Int",
    &[
        Field {
            name: "neg",
            json: "neg",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "abs",
            json: "abs",
            inline: false,
            ty: &T_BIG_NAT,
        },
    ],
);
static T_BIG_NAT: GoType = GoType::Slice("big.nat", &T_BIG_WORD);
static T_BIG_WORD: GoType = GoType::Uint("big.Word");
static T_BOOL: GoType = GoType::Bool("bool");
static T_INF_DEC: GoType = GoType::Struct(
    "inf.Dec",
    &[
        Field {
            name: "unscaled",
            json: "unscaled",
            inline: false,
            ty: &T_BIG_INT,
        },
        Field {
            name: "scale",
            json: "scale",
            inline: false,
            ty: &T_INF_SCALE,
        },
    ],
);
static T_INF_SCALE: GoType = GoType::Int("inf.Scale");
static T_INT: GoType = GoType::Int("int");
static T_INT32: GoType = GoType::Int("int32");
static T_INT64: GoType = GoType::Int("int64");
static T_INTSTR_INTORSTRING: GoType = GoType::Struct(
    "intstr.IntOrString",
    &[
        Field {
            name: "Type",
            json: "Type",
            inline: false,
            ty: &T_INTSTR_TYPE,
        },
        Field {
            name: "IntVal",
            json: "IntVal",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "StrVal",
            json: "StrVal",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_INTSTR_TYPE: GoType = GoType::Int("intstr.Type");
static T_MAP_STRING_STRING: GoType = GoType::Map("map[string]string", &T_STRING, &T_STRING);
static T_META_V1_FIELDSV1: GoType = GoType::Struct(
    "v1.FieldsV1",
    &[Field {
        name: "Raw",
        json: "-",
        inline: false,
        ty: &T_SLICE_UINT8,
    }],
);
static T_META_V1_LABELSELECTOR: GoType = GoType::Struct(
    "v1.LabelSelector",
    &[
        Field {
            name: "MatchLabels",
            json: "matchLabels",
            inline: false,
            ty: &T_MAP_STRING_STRING,
        },
        Field {
            name: "MatchExpressions",
            json: "matchExpressions",
            inline: false,
            ty: &T_SLICE_V1_LABELSELECTORREQUIREMENT,
        },
    ],
);
static T_META_V1_LABELSELECTOROPERATOR: GoType = GoType::Str("v1.LabelSelectorOperator");
static T_META_V1_LABELSELECTORREQUIREMENT: GoType = GoType::Struct(
    "v1.LabelSelectorRequirement",
    &[
        Field {
            name: "Key",
            json: "key",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Operator",
            json: "operator",
            inline: false,
            ty: &T_META_V1_LABELSELECTOROPERATOR,
        },
        Field {
            name: "Values",
            json: "values",
            inline: false,
            ty: &T_SLICE_STRING,
        },
    ],
);
static T_META_V1_MANAGEDFIELDSENTRY: GoType = GoType::Struct(
    "v1.ManagedFieldsEntry",
    &[
        Field {
            name: "Manager",
            json: "manager",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Operation",
            json: "operation",
            inline: false,
            ty: &T_META_V1_MANAGEDFIELDSOPERATIONTYPE,
        },
        Field {
            name: "APIVersion",
            json: "apiVersion",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Time",
            json: "time",
            inline: false,
            ty: &T_PTR_V1_TIME,
        },
        Field {
            name: "FieldsType",
            json: "fieldsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FieldsV1",
            json: "fieldsV1",
            inline: false,
            ty: &T_PTR_V1_FIELDSV1,
        },
        Field {
            name: "Subresource",
            json: "subresource",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_META_V1_MANAGEDFIELDSOPERATIONTYPE: GoType = GoType::Str("v1.ManagedFieldsOperationType");
static T_META_V1_OBJECTMETA: GoType = GoType::Struct(
    "v1.ObjectMeta",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "GenerateName",
            json: "generateName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Namespace",
            json: "namespace",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "SelfLink",
            json: "selfLink",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "UID",
            json: "uid",
            inline: false,
            ty: &T_TYPES_UID,
        },
        Field {
            name: "ResourceVersion",
            json: "resourceVersion",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Generation",
            json: "generation",
            inline: false,
            ty: &T_INT64,
        },
        Field {
            name: "CreationTimestamp",
            json: "creationTimestamp",
            inline: false,
            ty: &T_META_V1_TIME,
        },
        Field {
            name: "DeletionTimestamp",
            json: "deletionTimestamp",
            inline: false,
            ty: &T_PTR_V1_TIME,
        },
        Field {
            name: "DeletionGracePeriodSeconds",
            json: "deletionGracePeriodSeconds",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "Labels",
            json: "labels",
            inline: false,
            ty: &T_MAP_STRING_STRING,
        },
        Field {
            name: "Annotations",
            json: "annotations",
            inline: false,
            ty: &T_MAP_STRING_STRING,
        },
        Field {
            name: "OwnerReferences",
            json: "ownerReferences",
            inline: false,
            ty: &T_SLICE_V1_OWNERREFERENCE,
        },
        Field {
            name: "Finalizers",
            json: "finalizers",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "ManagedFields",
            json: "managedFields",
            inline: false,
            ty: &T_SLICE_V1_MANAGEDFIELDSENTRY,
        },
    ],
);
static T_META_V1_OWNERREFERENCE: GoType = GoType::Struct(
    "v1.OwnerReference",
    &[
        Field {
            name: "APIVersion",
            json: "apiVersion",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Kind",
            json: "kind",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "UID",
            json: "uid",
            inline: false,
            ty: &T_TYPES_UID,
        },
        Field {
            name: "Controller",
            json: "controller",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "BlockOwnerDeletion",
            json: "blockOwnerDeletion",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_META_V1_TIME: GoType = GoType::Struct(
    "v1.Time",
    &[Field {
        name: "Time",
        json: "Time",
        inline: true,
        ty: &T_TIME_TIME,
    }],
);
static T_PTR_BOOL: GoType = GoType::Ptr("*bool", &T_BOOL);
static T_PTR_INF_DEC: GoType = GoType::Ptr("*inf.Dec", &T_INF_DEC);
static T_PTR_INT32: GoType = GoType::Ptr("*int32", &T_INT32);
static T_PTR_INT64: GoType = GoType::Ptr("*int64", &T_INT64);
static T_PTR_RESOURCE_QUANTITY: GoType = GoType::Ptr("*resource.Quantity", &T_RESOURCE_QUANTITY);
static T_PTR_STRING: GoType = GoType::Ptr("*string", &T_STRING);
static T_PTR_TIME_LOCATION: GoType = GoType::Ptr("*time.Location", &T_TIME_LOCATION);
static T_PTR_TIME_ZONE: GoType = GoType::Ptr("*time.zone", &T_TIME_ZONE);
static T_PTR_V1_AFFINITY: GoType = GoType::Ptr("*v1.Affinity", &T_V1_AFFINITY);
static T_PTR_V1_APPARMORPROFILE: GoType = GoType::Ptr("*v1.AppArmorProfile", &T_V1_APPARMORPROFILE);
static T_PTR_V1_AWSELASTICBLOCKSTOREVOLUMESOURCE: GoType = GoType::Ptr(
    "*v1.AWSElasticBlockStoreVolumeSource",
    &T_V1_AWSELASTICBLOCKSTOREVOLUMESOURCE,
);
static T_PTR_V1_AZUREDATADISKCACHINGMODE: GoType = GoType::Ptr(
    "*v1.AzureDataDiskCachingMode",
    &T_V1_AZUREDATADISKCACHINGMODE,
);
static T_PTR_V1_AZUREDATADISKKIND: GoType =
    GoType::Ptr("*v1.AzureDataDiskKind", &T_V1_AZUREDATADISKKIND);
static T_PTR_V1_AZUREDISKVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.AzureDiskVolumeSource", &T_V1_AZUREDISKVOLUMESOURCE);
static T_PTR_V1_AZUREFILEVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.AzureFileVolumeSource", &T_V1_AZUREFILEVOLUMESOURCE);
static T_PTR_V1_CAPABILITIES: GoType = GoType::Ptr("*v1.Capabilities", &T_V1_CAPABILITIES);
static T_PTR_V1_CEPHFSVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.CephFSVolumeSource", &T_V1_CEPHFSVOLUMESOURCE);
static T_PTR_V1_CINDERVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.CinderVolumeSource", &T_V1_CINDERVOLUMESOURCE);
static T_PTR_V1_CLUSTERTRUSTBUNDLEPROJECTION: GoType = GoType::Ptr(
    "*v1.ClusterTrustBundleProjection",
    &T_V1_CLUSTERTRUSTBUNDLEPROJECTION,
);
static T_PTR_V1_CONFIGMAPENVSOURCE: GoType =
    GoType::Ptr("*v1.ConfigMapEnvSource", &T_V1_CONFIGMAPENVSOURCE);
static T_PTR_V1_CONFIGMAPKEYSELECTOR: GoType =
    GoType::Ptr("*v1.ConfigMapKeySelector", &T_V1_CONFIGMAPKEYSELECTOR);
static T_PTR_V1_CONFIGMAPPROJECTION: GoType =
    GoType::Ptr("*v1.ConfigMapProjection", &T_V1_CONFIGMAPPROJECTION);
static T_PTR_V1_CONFIGMAPVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.ConfigMapVolumeSource", &T_V1_CONFIGMAPVOLUMESOURCE);
static T_PTR_V1_CONTAINERRESTARTPOLICY: GoType =
    GoType::Ptr("*v1.ContainerRestartPolicy", &T_V1_CONTAINERRESTARTPOLICY);
static T_PTR_V1_CSIVOLUMESOURCE: GoType = GoType::Ptr("*v1.CSIVolumeSource", &T_V1_CSIVOLUMESOURCE);
static T_PTR_V1_DOWNWARDAPIPROJECTION: GoType =
    GoType::Ptr("*v1.DownwardAPIProjection", &T_V1_DOWNWARDAPIPROJECTION);
static T_PTR_V1_DOWNWARDAPIVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.DownwardAPIVolumeSource", &T_V1_DOWNWARDAPIVOLUMESOURCE);
static T_PTR_V1_EMPTYDIRVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.EmptyDirVolumeSource", &T_V1_EMPTYDIRVOLUMESOURCE);
static T_PTR_V1_ENVVARSOURCE: GoType = GoType::Ptr("*v1.EnvVarSource", &T_V1_ENVVARSOURCE);
static T_PTR_V1_EPHEMERALVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.EphemeralVolumeSource", &T_V1_EPHEMERALVOLUMESOURCE);
static T_PTR_V1_EXECACTION: GoType = GoType::Ptr("*v1.ExecAction", &T_V1_EXECACTION);
static T_PTR_V1_FCVOLUMESOURCE: GoType = GoType::Ptr("*v1.FCVolumeSource", &T_V1_FCVOLUMESOURCE);
static T_PTR_V1_FIELDSV1: GoType = GoType::Ptr("*v1.FieldsV1", &T_META_V1_FIELDSV1);
static T_PTR_V1_FLEXVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.FlexVolumeSource", &T_V1_FLEXVOLUMESOURCE);
static T_PTR_V1_FLOCKERVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.FlockerVolumeSource", &T_V1_FLOCKERVOLUMESOURCE);
static T_PTR_V1_GCEPERSISTENTDISKVOLUMESOURCE: GoType = GoType::Ptr(
    "*v1.GCEPersistentDiskVolumeSource",
    &T_V1_GCEPERSISTENTDISKVOLUMESOURCE,
);
static T_PTR_V1_GITREPOVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.GitRepoVolumeSource", &T_V1_GITREPOVOLUMESOURCE);
static T_PTR_V1_GLUSTERFSVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.GlusterfsVolumeSource", &T_V1_GLUSTERFSVOLUMESOURCE);
static T_PTR_V1_GRPCACTION: GoType = GoType::Ptr("*v1.GRPCAction", &T_V1_GRPCACTION);
static T_PTR_V1_HOSTPATHTYPE: GoType = GoType::Ptr("*v1.HostPathType", &T_V1_HOSTPATHTYPE);
static T_PTR_V1_HOSTPATHVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.HostPathVolumeSource", &T_V1_HOSTPATHVOLUMESOURCE);
static T_PTR_V1_HTTPGETACTION: GoType = GoType::Ptr("*v1.HTTPGetAction", &T_V1_HTTPGETACTION);
static T_PTR_V1_IMAGEVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.ImageVolumeSource", &T_V1_IMAGEVOLUMESOURCE);
static T_PTR_V1_ISCSIVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.ISCSIVolumeSource", &T_V1_ISCSIVOLUMESOURCE);
static T_PTR_V1_LABELSELECTOR: GoType = GoType::Ptr("*v1.LabelSelector", &T_META_V1_LABELSELECTOR);
static T_PTR_V1_LIFECYCLE: GoType = GoType::Ptr("*v1.Lifecycle", &T_V1_LIFECYCLE);
static T_PTR_V1_LIFECYCLEHANDLER: GoType =
    GoType::Ptr("*v1.LifecycleHandler", &T_V1_LIFECYCLEHANDLER);
static T_PTR_V1_LOCALOBJECTREFERENCE: GoType =
    GoType::Ptr("*v1.LocalObjectReference", &T_V1_LOCALOBJECTREFERENCE);
static T_PTR_V1_MOUNTPROPAGATIONMODE: GoType =
    GoType::Ptr("*v1.MountPropagationMode", &T_V1_MOUNTPROPAGATIONMODE);
static T_PTR_V1_NFSVOLUMESOURCE: GoType = GoType::Ptr("*v1.NFSVolumeSource", &T_V1_NFSVOLUMESOURCE);
static T_PTR_V1_NODEAFFINITY: GoType = GoType::Ptr("*v1.NodeAffinity", &T_V1_NODEAFFINITY);
static T_PTR_V1_NODEINCLUSIONPOLICY: GoType =
    GoType::Ptr("*v1.NodeInclusionPolicy", &T_V1_NODEINCLUSIONPOLICY);
static T_PTR_V1_NODESELECTOR: GoType = GoType::Ptr("*v1.NodeSelector", &T_V1_NODESELECTOR);
static T_PTR_V1_OBJECTFIELDSELECTOR: GoType =
    GoType::Ptr("*v1.ObjectFieldSelector", &T_V1_OBJECTFIELDSELECTOR);
static T_PTR_V1_PERSISTENTVOLUMECLAIMTEMPLATE: GoType = GoType::Ptr(
    "*v1.PersistentVolumeClaimTemplate",
    &T_V1_PERSISTENTVOLUMECLAIMTEMPLATE,
);
static T_PTR_V1_PERSISTENTVOLUMECLAIMVOLUMESOURCE: GoType = GoType::Ptr(
    "*v1.PersistentVolumeClaimVolumeSource",
    &T_V1_PERSISTENTVOLUMECLAIMVOLUMESOURCE,
);
static T_PTR_V1_PERSISTENTVOLUMEMODE: GoType =
    GoType::Ptr("*v1.PersistentVolumeMode", &T_V1_PERSISTENTVOLUMEMODE);
static T_PTR_V1_PHOTONPERSISTENTDISKVOLUMESOURCE: GoType = GoType::Ptr(
    "*v1.PhotonPersistentDiskVolumeSource",
    &T_V1_PHOTONPERSISTENTDISKVOLUMESOURCE,
);
static T_PTR_V1_PODAFFINITY: GoType = GoType::Ptr("*v1.PodAffinity", &T_V1_PODAFFINITY);
static T_PTR_V1_PODANTIAFFINITY: GoType = GoType::Ptr("*v1.PodAntiAffinity", &T_V1_PODANTIAFFINITY);
static T_PTR_V1_PODDNSCONFIG: GoType = GoType::Ptr("*v1.PodDNSConfig", &T_V1_PODDNSCONFIG);
static T_PTR_V1_PODFSGROUPCHANGEPOLICY: GoType =
    GoType::Ptr("*v1.PodFSGroupChangePolicy", &T_V1_PODFSGROUPCHANGEPOLICY);
static T_PTR_V1_PODOS: GoType = GoType::Ptr("*v1.PodOS", &T_V1_PODOS);
static T_PTR_V1_PODSECURITYCONTEXT: GoType =
    GoType::Ptr("*v1.PodSecurityContext", &T_V1_PODSECURITYCONTEXT);
static T_PTR_V1_PODSELINUXCHANGEPOLICY: GoType =
    GoType::Ptr("*v1.PodSELinuxChangePolicy", &T_V1_PODSELINUXCHANGEPOLICY);
static T_PTR_V1_PORTWORXVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.PortworxVolumeSource", &T_V1_PORTWORXVOLUMESOURCE);
static T_PTR_V1_PREEMPTIONPOLICY: GoType =
    GoType::Ptr("*v1.PreemptionPolicy", &T_V1_PREEMPTIONPOLICY);
static T_PTR_V1_PROBE: GoType = GoType::Ptr("*v1.Probe", &T_V1_PROBE);
static T_PTR_V1_PROCMOUNTTYPE: GoType = GoType::Ptr("*v1.ProcMountType", &T_V1_PROCMOUNTTYPE);
static T_PTR_V1_PROJECTEDVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.ProjectedVolumeSource", &T_V1_PROJECTEDVOLUMESOURCE);
static T_PTR_V1_QUOBYTEVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.QuobyteVolumeSource", &T_V1_QUOBYTEVOLUMESOURCE);
static T_PTR_V1_RBDVOLUMESOURCE: GoType = GoType::Ptr("*v1.RBDVolumeSource", &T_V1_RBDVOLUMESOURCE);
static T_PTR_V1_RECURSIVEREADONLYMODE: GoType =
    GoType::Ptr("*v1.RecursiveReadOnlyMode", &T_V1_RECURSIVEREADONLYMODE);
static T_PTR_V1_RESOURCEFIELDSELECTOR: GoType =
    GoType::Ptr("*v1.ResourceFieldSelector", &T_V1_RESOURCEFIELDSELECTOR);
static T_PTR_V1_RESOURCEREQUIREMENTS: GoType =
    GoType::Ptr("*v1.ResourceRequirements", &T_V1_RESOURCEREQUIREMENTS);
static T_PTR_V1_SCALEIOVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.ScaleIOVolumeSource", &T_V1_SCALEIOVOLUMESOURCE);
static T_PTR_V1_SECCOMPPROFILE: GoType = GoType::Ptr("*v1.SeccompProfile", &T_V1_SECCOMPPROFILE);
static T_PTR_V1_SECRETENVSOURCE: GoType = GoType::Ptr("*v1.SecretEnvSource", &T_V1_SECRETENVSOURCE);
static T_PTR_V1_SECRETKEYSELECTOR: GoType =
    GoType::Ptr("*v1.SecretKeySelector", &T_V1_SECRETKEYSELECTOR);
static T_PTR_V1_SECRETPROJECTION: GoType =
    GoType::Ptr("*v1.SecretProjection", &T_V1_SECRETPROJECTION);
static T_PTR_V1_SECRETVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.SecretVolumeSource", &T_V1_SECRETVOLUMESOURCE);
static T_PTR_V1_SECURITYCONTEXT: GoType = GoType::Ptr("*v1.SecurityContext", &T_V1_SECURITYCONTEXT);
static T_PTR_V1_SELINUXOPTIONS: GoType = GoType::Ptr("*v1.SELinuxOptions", &T_V1_SELINUXOPTIONS);
static T_PTR_V1_SERVICEACCOUNTTOKENPROJECTION: GoType = GoType::Ptr(
    "*v1.ServiceAccountTokenProjection",
    &T_V1_SERVICEACCOUNTTOKENPROJECTION,
);
static T_PTR_V1_SIGNAL: GoType = GoType::Ptr("*v1.Signal", &T_V1_SIGNAL);
static T_PTR_V1_SLEEPACTION: GoType = GoType::Ptr("*v1.SleepAction", &T_V1_SLEEPACTION);
static T_PTR_V1_STORAGEOSVOLUMESOURCE: GoType =
    GoType::Ptr("*v1.StorageOSVolumeSource", &T_V1_STORAGEOSVOLUMESOURCE);
static T_PTR_V1_SUPPLEMENTALGROUPSPOLICY: GoType = GoType::Ptr(
    "*v1.SupplementalGroupsPolicy",
    &T_V1_SUPPLEMENTALGROUPSPOLICY,
);
static T_PTR_V1_TCPSOCKETACTION: GoType = GoType::Ptr("*v1.TCPSocketAction", &T_V1_TCPSOCKETACTION);
static T_PTR_V1_TIME: GoType = GoType::Ptr("*v1.Time", &T_META_V1_TIME);
static T_PTR_V1_TYPEDLOCALOBJECTREFERENCE: GoType = GoType::Ptr(
    "*v1.TypedLocalObjectReference",
    &T_V1_TYPEDLOCALOBJECTREFERENCE,
);
static T_PTR_V1_TYPEDOBJECTREFERENCE: GoType =
    GoType::Ptr("*v1.TypedObjectReference", &T_V1_TYPEDOBJECTREFERENCE);
static T_PTR_V1_VSPHEREVIRTUALDISKVOLUMESOURCE: GoType = GoType::Ptr(
    "*v1.VsphereVirtualDiskVolumeSource",
    &T_V1_VSPHEREVIRTUALDISKVOLUMESOURCE,
);
static T_PTR_V1_WINDOWSSECURITYCONTEXTOPTIONS: GoType = GoType::Ptr(
    "*v1.WindowsSecurityContextOptions",
    &T_V1_WINDOWSSECURITYCONTEXTOPTIONS,
);
static T_RESOURCE_FORMAT: GoType = GoType::Str("resource.Format");
static T_RESOURCE_INFDECAMOUNT: GoType = GoType::Struct(
    "resource.infDecAmount",
    &[Field {
        name: "Dec",
        json: "Dec",
        inline: false,
        ty: &T_PTR_INF_DEC,
    }],
);
static T_RESOURCE_INT64AMOUNT: GoType = GoType::Struct(
    "resource.int64Amount",
    &[
        Field {
            name: "value",
            json: "value",
            inline: false,
            ty: &T_INT64,
        },
        Field {
            name: "scale",
            json: "scale",
            inline: false,
            ty: &T_RESOURCE_SCALE,
        },
    ],
);
static T_RESOURCE_QUANTITY: GoType = GoType::Struct(
    "resource.Quantity",
    &[
        Field {
            name: "i",
            json: "i",
            inline: false,
            ty: &T_RESOURCE_INT64AMOUNT,
        },
        Field {
            name: "d",
            json: "d",
            inline: false,
            ty: &T_RESOURCE_INFDECAMOUNT,
        },
        Field {
            name: "s",
            json: "s",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Format",
            json: "Format",
            inline: false,
            ty: &T_RESOURCE_FORMAT,
        },
    ],
);
static T_RESOURCE_SCALE: GoType = GoType::Int("resource.Scale");
static T_SLICE_INT64: GoType = GoType::Slice("[]int64", &T_INT64);
static T_SLICE_STRING: GoType = GoType::Slice("[]string", &T_STRING);
static T_SLICE_TIME_ZONE: GoType = GoType::Slice("[]time.zone", &T_TIME_ZONE);
static T_SLICE_TIME_ZONETRANS: GoType = GoType::Slice("[]time.zoneTrans", &T_TIME_ZONETRANS);
static T_SLICE_UINT8: GoType = GoType::Slice("[]uint8", &T_UINT8);
static T_SLICE_V1_CAPABILITY: GoType = GoType::Slice("[]v1.Capability", &T_V1_CAPABILITY);
static T_SLICE_V1_CONTAINER: GoType = GoType::Slice("[]v1.Container", &T_V1_CONTAINER);
static T_SLICE_V1_CONTAINERPORT: GoType = GoType::Slice("[]v1.ContainerPort", &T_V1_CONTAINERPORT);
static T_SLICE_V1_CONTAINERRESIZEPOLICY: GoType =
    GoType::Slice("[]v1.ContainerResizePolicy", &T_V1_CONTAINERRESIZEPOLICY);
static T_SLICE_V1_DOWNWARDAPIVOLUMEFILE: GoType =
    GoType::Slice("[]v1.DownwardAPIVolumeFile", &T_V1_DOWNWARDAPIVOLUMEFILE);
static T_SLICE_V1_ENVFROMSOURCE: GoType = GoType::Slice("[]v1.EnvFromSource", &T_V1_ENVFROMSOURCE);
static T_SLICE_V1_ENVVAR: GoType = GoType::Slice("[]v1.EnvVar", &T_V1_ENVVAR);
static T_SLICE_V1_EPHEMERALCONTAINER: GoType =
    GoType::Slice("[]v1.EphemeralContainer", &T_V1_EPHEMERALCONTAINER);
static T_SLICE_V1_HOSTALIAS: GoType = GoType::Slice("[]v1.HostAlias", &T_V1_HOSTALIAS);
static T_SLICE_V1_HTTPHEADER: GoType = GoType::Slice("[]v1.HTTPHeader", &T_V1_HTTPHEADER);
static T_SLICE_V1_KEYTOPATH: GoType = GoType::Slice("[]v1.KeyToPath", &T_V1_KEYTOPATH);
static T_SLICE_V1_LABELSELECTORREQUIREMENT: GoType = GoType::Slice(
    "[]v1.LabelSelectorRequirement",
    &T_META_V1_LABELSELECTORREQUIREMENT,
);
static T_SLICE_V1_LOCALOBJECTREFERENCE: GoType =
    GoType::Slice("[]v1.LocalObjectReference", &T_V1_LOCALOBJECTREFERENCE);
static T_SLICE_V1_MANAGEDFIELDSENTRY: GoType =
    GoType::Slice("[]v1.ManagedFieldsEntry", &T_META_V1_MANAGEDFIELDSENTRY);
static T_SLICE_V1_NODESELECTORREQUIREMENT: GoType = GoType::Slice(
    "[]v1.NodeSelectorRequirement",
    &T_V1_NODESELECTORREQUIREMENT,
);
static T_SLICE_V1_NODESELECTORTERM: GoType =
    GoType::Slice("[]v1.NodeSelectorTerm", &T_V1_NODESELECTORTERM);
static T_SLICE_V1_OWNERREFERENCE: GoType =
    GoType::Slice("[]v1.OwnerReference", &T_META_V1_OWNERREFERENCE);
static T_SLICE_V1_PERSISTENTVOLUMEACCESSMODE: GoType = GoType::Slice(
    "[]v1.PersistentVolumeAccessMode",
    &T_V1_PERSISTENTVOLUMEACCESSMODE,
);
static T_SLICE_V1_PODAFFINITYTERM: GoType =
    GoType::Slice("[]v1.PodAffinityTerm", &T_V1_PODAFFINITYTERM);
static T_SLICE_V1_PODDNSCONFIGOPTION: GoType =
    GoType::Slice("[]v1.PodDNSConfigOption", &T_V1_PODDNSCONFIGOPTION);
static T_SLICE_V1_PODREADINESSGATE: GoType =
    GoType::Slice("[]v1.PodReadinessGate", &T_V1_PODREADINESSGATE);
static T_SLICE_V1_PODRESOURCECLAIM: GoType =
    GoType::Slice("[]v1.PodResourceClaim", &T_V1_PODRESOURCECLAIM);
static T_SLICE_V1_PODSCHEDULINGGATE: GoType =
    GoType::Slice("[]v1.PodSchedulingGate", &T_V1_PODSCHEDULINGGATE);
static T_SLICE_V1_PREFERREDSCHEDULINGTERM: GoType = GoType::Slice(
    "[]v1.PreferredSchedulingTerm",
    &T_V1_PREFERREDSCHEDULINGTERM,
);
static T_SLICE_V1_RESOURCECLAIM: GoType = GoType::Slice("[]v1.ResourceClaim", &T_V1_RESOURCECLAIM);
static T_SLICE_V1_SYSCTL: GoType = GoType::Slice("[]v1.Sysctl", &T_V1_SYSCTL);
static T_SLICE_V1_TOLERATION: GoType = GoType::Slice("[]v1.Toleration", &T_V1_TOLERATION);
static T_SLICE_V1_TOPOLOGYSPREADCONSTRAINT: GoType = GoType::Slice(
    "[]v1.TopologySpreadConstraint",
    &T_V1_TOPOLOGYSPREADCONSTRAINT,
);
static T_SLICE_V1_VOLUME: GoType = GoType::Slice("[]v1.Volume", &T_V1_VOLUME);
static T_SLICE_V1_VOLUMEDEVICE: GoType = GoType::Slice("[]v1.VolumeDevice", &T_V1_VOLUMEDEVICE);
static T_SLICE_V1_VOLUMEMOUNT: GoType = GoType::Slice("[]v1.VolumeMount", &T_V1_VOLUMEMOUNT);
static T_SLICE_V1_VOLUMEPROJECTION: GoType =
    GoType::Slice("[]v1.VolumeProjection", &T_V1_VOLUMEPROJECTION);
static T_SLICE_V1_WEIGHTEDPODAFFINITYTERM: GoType = GoType::Slice(
    "[]v1.WeightedPodAffinityTerm",
    &T_V1_WEIGHTEDPODAFFINITYTERM,
);
static T_STRING: GoType = GoType::Str("string");
static T_TIME_LOCATION: GoType = GoType::Struct(
    "time.Location",
    &[
        Field {
            name: "name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "zone",
            json: "zone",
            inline: false,
            ty: &T_SLICE_TIME_ZONE,
        },
        Field {
            name: "tx",
            json: "tx",
            inline: false,
            ty: &T_SLICE_TIME_ZONETRANS,
        },
        Field {
            name: "extend",
            json: "extend",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "cacheStart",
            json: "cacheStart",
            inline: false,
            ty: &T_INT64,
        },
        Field {
            name: "cacheEnd",
            json: "cacheEnd",
            inline: false,
            ty: &T_INT64,
        },
        Field {
            name: "cacheZone",
            json: "cacheZone",
            inline: false,
            ty: &T_PTR_TIME_ZONE,
        },
    ],
);
static T_TIME_TIME: GoType = GoType::Struct(
    "time.Time",
    &[
        Field {
            name: "wall",
            json: "wall",
            inline: false,
            ty: &T_UINT64,
        },
        Field {
            name: "ext",
            json: "ext",
            inline: false,
            ty: &T_INT64,
        },
        Field {
            name: "loc",
            json: "loc",
            inline: false,
            ty: &T_PTR_TIME_LOCATION,
        },
    ],
);
static T_TIME_ZONE: GoType = GoType::Struct(
    "time.zone",
    &[
        Field {
            name: "name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "offset",
            json: "offset",
            inline: false,
            ty: &T_INT,
        },
        Field {
            name: "isDST",
            json: "isDST",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_TIME_ZONETRANS: GoType = GoType::Struct(
    "time.zoneTrans",
    &[
        Field {
            name: "when",
            json: "when",
            inline: false,
            ty: &T_INT64,
        },
        Field {
            name: "index",
            json: "index",
            inline: false,
            ty: &T_UINT8,
        },
        Field {
            name: "isstd",
            json: "isstd",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "isutc",
            json: "isutc",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_TYPES_UID: GoType = GoType::Str("types.UID");
static T_UINT64: GoType = GoType::Uint("uint64");
static T_UINT8: GoType = GoType::Uint("uint8");
static T_V1_AFFINITY: GoType = GoType::Struct(
    "v1.Affinity",
    &[
        Field {
            name: "NodeAffinity",
            json: "nodeAffinity",
            inline: false,
            ty: &T_PTR_V1_NODEAFFINITY,
        },
        Field {
            name: "PodAffinity",
            json: "podAffinity",
            inline: false,
            ty: &T_PTR_V1_PODAFFINITY,
        },
        Field {
            name: "PodAntiAffinity",
            json: "podAntiAffinity",
            inline: false,
            ty: &T_PTR_V1_PODANTIAFFINITY,
        },
    ],
);
static T_V1_APPARMORPROFILE: GoType = GoType::Struct(
    "v1.AppArmorProfile",
    &[
        Field {
            name: "Type",
            json: "type",
            inline: false,
            ty: &T_V1_APPARMORPROFILETYPE,
        },
        Field {
            name: "LocalhostProfile",
            json: "localhostProfile",
            inline: false,
            ty: &T_PTR_STRING,
        },
    ],
);
static T_V1_APPARMORPROFILETYPE: GoType = GoType::Str("v1.AppArmorProfileType");
static T_V1_AWSELASTICBLOCKSTOREVOLUMESOURCE: GoType = GoType::Struct(
    "v1.AWSElasticBlockStoreVolumeSource",
    &[
        Field {
            name: "VolumeID",
            json: "volumeID",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Partition",
            json: "partition",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_AZUREDATADISKCACHINGMODE: GoType = GoType::Str("v1.AzureDataDiskCachingMode");
static T_V1_AZUREDATADISKKIND: GoType = GoType::Str("v1.AzureDataDiskKind");
static T_V1_AZUREDISKVOLUMESOURCE: GoType = GoType::Struct(
    "v1.AzureDiskVolumeSource",
    &[
        Field {
            name: "DiskName",
            json: "diskName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "DataDiskURI",
            json: "diskURI",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "CachingMode",
            json: "cachingMode",
            inline: false,
            ty: &T_PTR_V1_AZUREDATADISKCACHINGMODE,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "Kind",
            json: "kind",
            inline: false,
            ty: &T_PTR_V1_AZUREDATADISKKIND,
        },
    ],
);
static T_V1_AZUREFILEVOLUMESOURCE: GoType = GoType::Struct(
    "v1.AzureFileVolumeSource",
    &[
        Field {
            name: "SecretName",
            json: "secretName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ShareName",
            json: "shareName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_CAPABILITIES: GoType = GoType::Struct(
    "v1.Capabilities",
    &[
        Field {
            name: "Add",
            json: "add",
            inline: false,
            ty: &T_SLICE_V1_CAPABILITY,
        },
        Field {
            name: "Drop",
            json: "drop",
            inline: false,
            ty: &T_SLICE_V1_CAPABILITY,
        },
    ],
);
static T_V1_CAPABILITY: GoType = GoType::Str("v1.Capability");
static T_V1_CEPHFSVOLUMESOURCE: GoType = GoType::Struct(
    "v1.CephFSVolumeSource",
    &[
        Field {
            name: "Monitors",
            json: "monitors",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "User",
            json: "user",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "SecretFile",
            json: "secretFile",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "SecretRef",
            json: "secretRef",
            inline: false,
            ty: &T_PTR_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_CINDERVOLUMESOURCE: GoType = GoType::Struct(
    "v1.CinderVolumeSource",
    &[
        Field {
            name: "VolumeID",
            json: "volumeID",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "SecretRef",
            json: "secretRef",
            inline: false,
            ty: &T_PTR_V1_LOCALOBJECTREFERENCE,
        },
    ],
);
static T_V1_CLUSTERTRUSTBUNDLEPROJECTION: GoType = GoType::Struct(
    "v1.ClusterTrustBundleProjection",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "SignerName",
            json: "signerName",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "LabelSelector",
            json: "labelSelector",
            inline: false,
            ty: &T_PTR_V1_LABELSELECTOR,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_CONFIGMAPENVSOURCE: GoType = GoType::Struct(
    "v1.ConfigMapEnvSource",
    &[
        Field {
            name: "LocalObjectReference",
            json: "LocalObjectReference",
            inline: true,
            ty: &T_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_V1_CONFIGMAPKEYSELECTOR: GoType = GoType::Struct(
    "v1.ConfigMapKeySelector",
    &[
        Field {
            name: "LocalObjectReference",
            json: "LocalObjectReference",
            inline: true,
            ty: &T_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "Key",
            json: "key",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_V1_CONFIGMAPPROJECTION: GoType = GoType::Struct(
    "v1.ConfigMapProjection",
    &[
        Field {
            name: "LocalObjectReference",
            json: "LocalObjectReference",
            inline: true,
            ty: &T_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "Items",
            json: "items",
            inline: false,
            ty: &T_SLICE_V1_KEYTOPATH,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_V1_CONFIGMAPVOLUMESOURCE: GoType = GoType::Struct(
    "v1.ConfigMapVolumeSource",
    &[
        Field {
            name: "LocalObjectReference",
            json: "LocalObjectReference",
            inline: true,
            ty: &T_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "Items",
            json: "items",
            inline: false,
            ty: &T_SLICE_V1_KEYTOPATH,
        },
        Field {
            name: "DefaultMode",
            json: "defaultMode",
            inline: false,
            ty: &T_PTR_INT32,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_V1_CONTAINER: GoType = GoType::Struct(
    "v1.Container",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Image",
            json: "image",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Command",
            json: "command",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "Args",
            json: "args",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "WorkingDir",
            json: "workingDir",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Ports",
            json: "ports",
            inline: false,
            ty: &T_SLICE_V1_CONTAINERPORT,
        },
        Field {
            name: "EnvFrom",
            json: "envFrom",
            inline: false,
            ty: &T_SLICE_V1_ENVFROMSOURCE,
        },
        Field {
            name: "Env",
            json: "env",
            inline: false,
            ty: &T_SLICE_V1_ENVVAR,
        },
        Field {
            name: "Resources",
            json: "resources",
            inline: false,
            ty: &T_V1_RESOURCEREQUIREMENTS,
        },
        Field {
            name: "ResizePolicy",
            json: "resizePolicy",
            inline: false,
            ty: &T_SLICE_V1_CONTAINERRESIZEPOLICY,
        },
        Field {
            name: "RestartPolicy",
            json: "restartPolicy",
            inline: false,
            ty: &T_PTR_V1_CONTAINERRESTARTPOLICY,
        },
        Field {
            name: "VolumeMounts",
            json: "volumeMounts",
            inline: false,
            ty: &T_SLICE_V1_VOLUMEMOUNT,
        },
        Field {
            name: "VolumeDevices",
            json: "volumeDevices",
            inline: false,
            ty: &T_SLICE_V1_VOLUMEDEVICE,
        },
        Field {
            name: "LivenessProbe",
            json: "livenessProbe",
            inline: false,
            ty: &T_PTR_V1_PROBE,
        },
        Field {
            name: "ReadinessProbe",
            json: "readinessProbe",
            inline: false,
            ty: &T_PTR_V1_PROBE,
        },
        Field {
            name: "StartupProbe",
            json: "startupProbe",
            inline: false,
            ty: &T_PTR_V1_PROBE,
        },
        Field {
            name: "Lifecycle",
            json: "lifecycle",
            inline: false,
            ty: &T_PTR_V1_LIFECYCLE,
        },
        Field {
            name: "TerminationMessagePath",
            json: "terminationMessagePath",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "TerminationMessagePolicy",
            json: "terminationMessagePolicy",
            inline: false,
            ty: &T_V1_TERMINATIONMESSAGEPOLICY,
        },
        Field {
            name: "ImagePullPolicy",
            json: "imagePullPolicy",
            inline: false,
            ty: &T_V1_PULLPOLICY,
        },
        Field {
            name: "SecurityContext",
            json: "securityContext",
            inline: false,
            ty: &T_PTR_V1_SECURITYCONTEXT,
        },
        Field {
            name: "Stdin",
            json: "stdin",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "StdinOnce",
            json: "stdinOnce",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "TTY",
            json: "tty",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_CONTAINERPORT: GoType = GoType::Struct(
    "v1.ContainerPort",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "HostPort",
            json: "hostPort",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "ContainerPort",
            json: "containerPort",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "Protocol",
            json: "protocol",
            inline: false,
            ty: &T_V1_PROTOCOL,
        },
        Field {
            name: "HostIP",
            json: "hostIP",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_CONTAINERRESIZEPOLICY: GoType = GoType::Struct(
    "v1.ContainerResizePolicy",
    &[
        Field {
            name: "ResourceName",
            json: "resourceName",
            inline: false,
            ty: &T_V1_RESOURCENAME,
        },
        Field {
            name: "RestartPolicy",
            json: "restartPolicy",
            inline: false,
            ty: &T_V1_RESOURCERESIZERESTARTPOLICY,
        },
    ],
);
static T_V1_CONTAINERRESTARTPOLICY: GoType = GoType::Str("v1.ContainerRestartPolicy");
static T_V1_CSIVOLUMESOURCE: GoType = GoType::Struct(
    "v1.CSIVolumeSource",
    &[
        Field {
            name: "Driver",
            json: "driver",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "VolumeAttributes",
            json: "volumeAttributes",
            inline: false,
            ty: &T_MAP_STRING_STRING,
        },
        Field {
            name: "NodePublishSecretRef",
            json: "nodePublishSecretRef",
            inline: false,
            ty: &T_PTR_V1_LOCALOBJECTREFERENCE,
        },
    ],
);
static T_V1_DNSPOLICY: GoType = GoType::Str("v1.DNSPolicy");
static T_V1_DOWNWARDAPIPROJECTION: GoType = GoType::Struct(
    "v1.DownwardAPIProjection",
    &[Field {
        name: "Items",
        json: "items",
        inline: false,
        ty: &T_SLICE_V1_DOWNWARDAPIVOLUMEFILE,
    }],
);
static T_V1_DOWNWARDAPIVOLUMEFILE: GoType = GoType::Struct(
    "v1.DownwardAPIVolumeFile",
    &[
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FieldRef",
            json: "fieldRef",
            inline: false,
            ty: &T_PTR_V1_OBJECTFIELDSELECTOR,
        },
        Field {
            name: "ResourceFieldRef",
            json: "resourceFieldRef",
            inline: false,
            ty: &T_PTR_V1_RESOURCEFIELDSELECTOR,
        },
        Field {
            name: "Mode",
            json: "mode",
            inline: false,
            ty: &T_PTR_INT32,
        },
    ],
);
static T_V1_DOWNWARDAPIVOLUMESOURCE: GoType = GoType::Struct(
    "v1.DownwardAPIVolumeSource",
    &[
        Field {
            name: "Items",
            json: "items",
            inline: false,
            ty: &T_SLICE_V1_DOWNWARDAPIVOLUMEFILE,
        },
        Field {
            name: "DefaultMode",
            json: "defaultMode",
            inline: false,
            ty: &T_PTR_INT32,
        },
    ],
);
static T_V1_EMPTYDIRVOLUMESOURCE: GoType = GoType::Struct(
    "v1.EmptyDirVolumeSource",
    &[
        Field {
            name: "Medium",
            json: "medium",
            inline: false,
            ty: &T_V1_STORAGEMEDIUM,
        },
        Field {
            name: "SizeLimit",
            json: "sizeLimit",
            inline: false,
            ty: &T_PTR_RESOURCE_QUANTITY,
        },
    ],
);
static T_V1_ENVFROMSOURCE: GoType = GoType::Struct(
    "v1.EnvFromSource",
    &[
        Field {
            name: "Prefix",
            json: "prefix",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ConfigMapRef",
            json: "configMapRef",
            inline: false,
            ty: &T_PTR_V1_CONFIGMAPENVSOURCE,
        },
        Field {
            name: "SecretRef",
            json: "secretRef",
            inline: false,
            ty: &T_PTR_V1_SECRETENVSOURCE,
        },
    ],
);
static T_V1_ENVVAR: GoType = GoType::Struct(
    "v1.EnvVar",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Value",
            json: "value",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ValueFrom",
            json: "valueFrom",
            inline: false,
            ty: &T_PTR_V1_ENVVARSOURCE,
        },
    ],
);
static T_V1_ENVVARSOURCE: GoType = GoType::Struct(
    "v1.EnvVarSource",
    &[
        Field {
            name: "FieldRef",
            json: "fieldRef",
            inline: false,
            ty: &T_PTR_V1_OBJECTFIELDSELECTOR,
        },
        Field {
            name: "ResourceFieldRef",
            json: "resourceFieldRef",
            inline: false,
            ty: &T_PTR_V1_RESOURCEFIELDSELECTOR,
        },
        Field {
            name: "ConfigMapKeyRef",
            json: "configMapKeyRef",
            inline: false,
            ty: &T_PTR_V1_CONFIGMAPKEYSELECTOR,
        },
        Field {
            name: "SecretKeyRef",
            json: "secretKeyRef",
            inline: false,
            ty: &T_PTR_V1_SECRETKEYSELECTOR,
        },
    ],
);
static T_V1_EPHEMERALCONTAINER: GoType = GoType::Struct(
    "v1.EphemeralContainer",
    &[
        Field {
            name: "EphemeralContainerCommon",
            json: "EphemeralContainerCommon",
            inline: true,
            ty: &T_V1_EPHEMERALCONTAINERCOMMON,
        },
        Field {
            name: "TargetContainerName",
            json: "targetContainerName",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_EPHEMERALCONTAINERCOMMON: GoType = GoType::Struct(
    "v1.EphemeralContainerCommon",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Image",
            json: "image",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Command",
            json: "command",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "Args",
            json: "args",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "WorkingDir",
            json: "workingDir",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Ports",
            json: "ports",
            inline: false,
            ty: &T_SLICE_V1_CONTAINERPORT,
        },
        Field {
            name: "EnvFrom",
            json: "envFrom",
            inline: false,
            ty: &T_SLICE_V1_ENVFROMSOURCE,
        },
        Field {
            name: "Env",
            json: "env",
            inline: false,
            ty: &T_SLICE_V1_ENVVAR,
        },
        Field {
            name: "Resources",
            json: "resources",
            inline: false,
            ty: &T_V1_RESOURCEREQUIREMENTS,
        },
        Field {
            name: "ResizePolicy",
            json: "resizePolicy",
            inline: false,
            ty: &T_SLICE_V1_CONTAINERRESIZEPOLICY,
        },
        Field {
            name: "RestartPolicy",
            json: "restartPolicy",
            inline: false,
            ty: &T_PTR_V1_CONTAINERRESTARTPOLICY,
        },
        Field {
            name: "VolumeMounts",
            json: "volumeMounts",
            inline: false,
            ty: &T_SLICE_V1_VOLUMEMOUNT,
        },
        Field {
            name: "VolumeDevices",
            json: "volumeDevices",
            inline: false,
            ty: &T_SLICE_V1_VOLUMEDEVICE,
        },
        Field {
            name: "LivenessProbe",
            json: "livenessProbe",
            inline: false,
            ty: &T_PTR_V1_PROBE,
        },
        Field {
            name: "ReadinessProbe",
            json: "readinessProbe",
            inline: false,
            ty: &T_PTR_V1_PROBE,
        },
        Field {
            name: "StartupProbe",
            json: "startupProbe",
            inline: false,
            ty: &T_PTR_V1_PROBE,
        },
        Field {
            name: "Lifecycle",
            json: "lifecycle",
            inline: false,
            ty: &T_PTR_V1_LIFECYCLE,
        },
        Field {
            name: "TerminationMessagePath",
            json: "terminationMessagePath",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "TerminationMessagePolicy",
            json: "terminationMessagePolicy",
            inline: false,
            ty: &T_V1_TERMINATIONMESSAGEPOLICY,
        },
        Field {
            name: "ImagePullPolicy",
            json: "imagePullPolicy",
            inline: false,
            ty: &T_V1_PULLPOLICY,
        },
        Field {
            name: "SecurityContext",
            json: "securityContext",
            inline: false,
            ty: &T_PTR_V1_SECURITYCONTEXT,
        },
        Field {
            name: "Stdin",
            json: "stdin",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "StdinOnce",
            json: "stdinOnce",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "TTY",
            json: "tty",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_EPHEMERALVOLUMESOURCE: GoType = GoType::Struct(
    "v1.EphemeralVolumeSource",
    &[Field {
        name: "VolumeClaimTemplate",
        json: "volumeClaimTemplate",
        inline: false,
        ty: &T_PTR_V1_PERSISTENTVOLUMECLAIMTEMPLATE,
    }],
);
static T_V1_EXECACTION: GoType = GoType::Struct(
    "v1.ExecAction",
    &[Field {
        name: "Command",
        json: "command",
        inline: false,
        ty: &T_SLICE_STRING,
    }],
);
static T_V1_FCVOLUMESOURCE: GoType = GoType::Struct(
    "v1.FCVolumeSource",
    &[
        Field {
            name: "TargetWWNs",
            json: "targetWWNs",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "Lun",
            json: "lun",
            inline: false,
            ty: &T_PTR_INT32,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "WWIDs",
            json: "wwids",
            inline: false,
            ty: &T_SLICE_STRING,
        },
    ],
);
static T_V1_FLEXVOLUMESOURCE: GoType = GoType::Struct(
    "v1.FlexVolumeSource",
    &[
        Field {
            name: "Driver",
            json: "driver",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "SecretRef",
            json: "secretRef",
            inline: false,
            ty: &T_PTR_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "Options",
            json: "options",
            inline: false,
            ty: &T_MAP_STRING_STRING,
        },
    ],
);
static T_V1_FLOCKERVOLUMESOURCE: GoType = GoType::Struct(
    "v1.FlockerVolumeSource",
    &[
        Field {
            name: "DatasetName",
            json: "datasetName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "DatasetUUID",
            json: "datasetUUID",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_GCEPERSISTENTDISKVOLUMESOURCE: GoType = GoType::Struct(
    "v1.GCEPersistentDiskVolumeSource",
    &[
        Field {
            name: "PDName",
            json: "pdName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Partition",
            json: "partition",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_GITREPOVOLUMESOURCE: GoType = GoType::Struct(
    "v1.GitRepoVolumeSource",
    &[
        Field {
            name: "Repository",
            json: "repository",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Revision",
            json: "revision",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Directory",
            json: "directory",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_GLUSTERFSVOLUMESOURCE: GoType = GoType::Struct(
    "v1.GlusterfsVolumeSource",
    &[
        Field {
            name: "EndpointsName",
            json: "endpoints",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_GRPCACTION: GoType = GoType::Struct(
    "v1.GRPCAction",
    &[
        Field {
            name: "Port",
            json: "port",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "Service",
            json: "service",
            inline: false,
            ty: &T_PTR_STRING,
        },
    ],
);
static T_V1_HOSTALIAS: GoType = GoType::Struct(
    "v1.HostAlias",
    &[
        Field {
            name: "IP",
            json: "ip",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Hostnames",
            json: "hostnames",
            inline: false,
            ty: &T_SLICE_STRING,
        },
    ],
);
static T_V1_HOSTPATHTYPE: GoType = GoType::Str("v1.HostPathType");
static T_V1_HOSTPATHVOLUMESOURCE: GoType = GoType::Struct(
    "v1.HostPathVolumeSource",
    &[
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Type",
            json: "type",
            inline: false,
            ty: &T_PTR_V1_HOSTPATHTYPE,
        },
    ],
);
static T_V1_HTTPGETACTION: GoType = GoType::Struct(
    "v1.HTTPGetAction",
    &[
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Port",
            json: "port",
            inline: false,
            ty: &T_INTSTR_INTORSTRING,
        },
        Field {
            name: "Host",
            json: "host",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Scheme",
            json: "scheme",
            inline: false,
            ty: &T_V1_URISCHEME,
        },
        Field {
            name: "HTTPHeaders",
            json: "httpHeaders",
            inline: false,
            ty: &T_SLICE_V1_HTTPHEADER,
        },
    ],
);
static T_V1_HTTPHEADER: GoType = GoType::Struct(
    "v1.HTTPHeader",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Value",
            json: "value",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_IMAGEVOLUMESOURCE: GoType = GoType::Struct(
    "v1.ImageVolumeSource",
    &[
        Field {
            name: "Reference",
            json: "reference",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "PullPolicy",
            json: "pullPolicy",
            inline: false,
            ty: &T_V1_PULLPOLICY,
        },
    ],
);
static T_V1_ISCSIVOLUMESOURCE: GoType = GoType::Struct(
    "v1.ISCSIVolumeSource",
    &[
        Field {
            name: "TargetPortal",
            json: "targetPortal",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "IQN",
            json: "iqn",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Lun",
            json: "lun",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "ISCSIInterface",
            json: "iscsiInterface",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "Portals",
            json: "portals",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "DiscoveryCHAPAuth",
            json: "chapAuthDiscovery",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "SessionCHAPAuth",
            json: "chapAuthSession",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "SecretRef",
            json: "secretRef",
            inline: false,
            ty: &T_PTR_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "InitiatorName",
            json: "initiatorName",
            inline: false,
            ty: &T_PTR_STRING,
        },
    ],
);
static T_V1_KEYTOPATH: GoType = GoType::Struct(
    "v1.KeyToPath",
    &[
        Field {
            name: "Key",
            json: "key",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Mode",
            json: "mode",
            inline: false,
            ty: &T_PTR_INT32,
        },
    ],
);
static T_V1_LIFECYCLE: GoType = GoType::Struct(
    "v1.Lifecycle",
    &[
        Field {
            name: "PostStart",
            json: "postStart",
            inline: false,
            ty: &T_PTR_V1_LIFECYCLEHANDLER,
        },
        Field {
            name: "PreStop",
            json: "preStop",
            inline: false,
            ty: &T_PTR_V1_LIFECYCLEHANDLER,
        },
        Field {
            name: "StopSignal",
            json: "stopSignal",
            inline: false,
            ty: &T_PTR_V1_SIGNAL,
        },
    ],
);
static T_V1_LIFECYCLEHANDLER: GoType = GoType::Struct(
    "v1.LifecycleHandler",
    &[
        Field {
            name: "Exec",
            json: "exec",
            inline: false,
            ty: &T_PTR_V1_EXECACTION,
        },
        Field {
            name: "HTTPGet",
            json: "httpGet",
            inline: false,
            ty: &T_PTR_V1_HTTPGETACTION,
        },
        Field {
            name: "TCPSocket",
            json: "tcpSocket",
            inline: false,
            ty: &T_PTR_V1_TCPSOCKETACTION,
        },
        Field {
            name: "Sleep",
            json: "sleep",
            inline: false,
            ty: &T_PTR_V1_SLEEPACTION,
        },
    ],
);
static T_V1_LOCALOBJECTREFERENCE: GoType = GoType::Struct(
    "v1.LocalObjectReference",
    &[Field {
        name: "Name",
        json: "name",
        inline: false,
        ty: &T_STRING,
    }],
);
static T_V1_MOUNTPROPAGATIONMODE: GoType = GoType::Str("v1.MountPropagationMode");
static T_V1_NFSVOLUMESOURCE: GoType = GoType::Struct(
    "v1.NFSVolumeSource",
    &[
        Field {
            name: "Server",
            json: "server",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_NODEAFFINITY: GoType = GoType::Struct(
    "v1.NodeAffinity",
    &[
        Field {
            name: "RequiredDuringSchedulingIgnoredDuringExecution",
            json: "requiredDuringSchedulingIgnoredDuringExecution",
            inline: false,
            ty: &T_PTR_V1_NODESELECTOR,
        },
        Field {
            name: "PreferredDuringSchedulingIgnoredDuringExecution",
            json: "preferredDuringSchedulingIgnoredDuringExecution",
            inline: false,
            ty: &T_SLICE_V1_PREFERREDSCHEDULINGTERM,
        },
    ],
);
static T_V1_NODEINCLUSIONPOLICY: GoType = GoType::Str("v1.NodeInclusionPolicy");
static T_V1_NODESELECTOR: GoType = GoType::Struct(
    "v1.NodeSelector",
    &[Field {
        name: "NodeSelectorTerms",
        json: "nodeSelectorTerms",
        inline: false,
        ty: &T_SLICE_V1_NODESELECTORTERM,
    }],
);
static T_V1_NODESELECTOROPERATOR: GoType = GoType::Str("v1.NodeSelectorOperator");
static T_V1_NODESELECTORREQUIREMENT: GoType = GoType::Struct(
    "v1.NodeSelectorRequirement",
    &[
        Field {
            name: "Key",
            json: "key",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Operator",
            json: "operator",
            inline: false,
            ty: &T_V1_NODESELECTOROPERATOR,
        },
        Field {
            name: "Values",
            json: "values",
            inline: false,
            ty: &T_SLICE_STRING,
        },
    ],
);
static T_V1_NODESELECTORTERM: GoType = GoType::Struct(
    "v1.NodeSelectorTerm",
    &[
        Field {
            name: "MatchExpressions",
            json: "matchExpressions",
            inline: false,
            ty: &T_SLICE_V1_NODESELECTORREQUIREMENT,
        },
        Field {
            name: "MatchFields",
            json: "matchFields",
            inline: false,
            ty: &T_SLICE_V1_NODESELECTORREQUIREMENT,
        },
    ],
);
static T_V1_OBJECTFIELDSELECTOR: GoType = GoType::Struct(
    "v1.ObjectFieldSelector",
    &[
        Field {
            name: "APIVersion",
            json: "apiVersion",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FieldPath",
            json: "fieldPath",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_OSNAME: GoType = GoType::Str("v1.OSName");
static T_V1_PERSISTENTVOLUMEACCESSMODE: GoType = GoType::Str("v1.PersistentVolumeAccessMode");
static T_V1_PERSISTENTVOLUMECLAIMSPEC: GoType = GoType::Struct(
    "v1.PersistentVolumeClaimSpec",
    &[
        Field {
            name: "AccessModes",
            json: "accessModes",
            inline: false,
            ty: &T_SLICE_V1_PERSISTENTVOLUMEACCESSMODE,
        },
        Field {
            name: "Selector",
            json: "selector",
            inline: false,
            ty: &T_PTR_V1_LABELSELECTOR,
        },
        Field {
            name: "Resources",
            json: "resources",
            inline: false,
            ty: &T_V1_VOLUMERESOURCEREQUIREMENTS,
        },
        Field {
            name: "VolumeName",
            json: "volumeName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "StorageClassName",
            json: "storageClassName",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "VolumeMode",
            json: "volumeMode",
            inline: false,
            ty: &T_PTR_V1_PERSISTENTVOLUMEMODE,
        },
        Field {
            name: "DataSource",
            json: "dataSource",
            inline: false,
            ty: &T_PTR_V1_TYPEDLOCALOBJECTREFERENCE,
        },
        Field {
            name: "DataSourceRef",
            json: "dataSourceRef",
            inline: false,
            ty: &T_PTR_V1_TYPEDOBJECTREFERENCE,
        },
        Field {
            name: "VolumeAttributesClassName",
            json: "volumeAttributesClassName",
            inline: false,
            ty: &T_PTR_STRING,
        },
    ],
);
static T_V1_PERSISTENTVOLUMECLAIMTEMPLATE: GoType = GoType::Struct(
    "v1.PersistentVolumeClaimTemplate",
    &[
        Field {
            name: "ObjectMeta",
            json: "metadata",
            inline: false,
            ty: &T_META_V1_OBJECTMETA,
        },
        Field {
            name: "Spec",
            json: "spec",
            inline: false,
            ty: &T_V1_PERSISTENTVOLUMECLAIMSPEC,
        },
    ],
);
static T_V1_PERSISTENTVOLUMECLAIMVOLUMESOURCE: GoType = GoType::Struct(
    "v1.PersistentVolumeClaimVolumeSource",
    &[
        Field {
            name: "ClaimName",
            json: "claimName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_PERSISTENTVOLUMEMODE: GoType = GoType::Str("v1.PersistentVolumeMode");
static T_V1_PHOTONPERSISTENTDISKVOLUMESOURCE: GoType = GoType::Struct(
    "v1.PhotonPersistentDiskVolumeSource",
    &[
        Field {
            name: "PdID",
            json: "pdID",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_PODAFFINITY: GoType = GoType::Struct(
    "v1.PodAffinity",
    &[
        Field {
            name: "RequiredDuringSchedulingIgnoredDuringExecution",
            json: "requiredDuringSchedulingIgnoredDuringExecution",
            inline: false,
            ty: &T_SLICE_V1_PODAFFINITYTERM,
        },
        Field {
            name: "PreferredDuringSchedulingIgnoredDuringExecution",
            json: "preferredDuringSchedulingIgnoredDuringExecution",
            inline: false,
            ty: &T_SLICE_V1_WEIGHTEDPODAFFINITYTERM,
        },
    ],
);
static T_V1_PODAFFINITYTERM: GoType = GoType::Struct(
    "v1.PodAffinityTerm",
    &[
        Field {
            name: "LabelSelector",
            json: "labelSelector",
            inline: false,
            ty: &T_PTR_V1_LABELSELECTOR,
        },
        Field {
            name: "Namespaces",
            json: "namespaces",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "TopologyKey",
            json: "topologyKey",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "NamespaceSelector",
            json: "namespaceSelector",
            inline: false,
            ty: &T_PTR_V1_LABELSELECTOR,
        },
        Field {
            name: "MatchLabelKeys",
            json: "matchLabelKeys",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "MismatchLabelKeys",
            json: "mismatchLabelKeys",
            inline: false,
            ty: &T_SLICE_STRING,
        },
    ],
);
static T_V1_PODANTIAFFINITY: GoType = GoType::Struct(
    "v1.PodAntiAffinity",
    &[
        Field {
            name: "RequiredDuringSchedulingIgnoredDuringExecution",
            json: "requiredDuringSchedulingIgnoredDuringExecution",
            inline: false,
            ty: &T_SLICE_V1_PODAFFINITYTERM,
        },
        Field {
            name: "PreferredDuringSchedulingIgnoredDuringExecution",
            json: "preferredDuringSchedulingIgnoredDuringExecution",
            inline: false,
            ty: &T_SLICE_V1_WEIGHTEDPODAFFINITYTERM,
        },
    ],
);
static T_V1_PODCONDITIONTYPE: GoType = GoType::Str("v1.PodConditionType");
static T_V1_PODDNSCONFIG: GoType = GoType::Struct(
    "v1.PodDNSConfig",
    &[
        Field {
            name: "Nameservers",
            json: "nameservers",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "Searches",
            json: "searches",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "Options",
            json: "options",
            inline: false,
            ty: &T_SLICE_V1_PODDNSCONFIGOPTION,
        },
    ],
);
static T_V1_PODDNSCONFIGOPTION: GoType = GoType::Struct(
    "v1.PodDNSConfigOption",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Value",
            json: "value",
            inline: false,
            ty: &T_PTR_STRING,
        },
    ],
);
static T_V1_PODFSGROUPCHANGEPOLICY: GoType = GoType::Str("v1.PodFSGroupChangePolicy");
static T_V1_PODOS: GoType = GoType::Struct(
    "v1.PodOS",
    &[Field {
        name: "Name",
        json: "name",
        inline: false,
        ty: &T_V1_OSNAME,
    }],
);
static T_V1_PODREADINESSGATE: GoType = GoType::Struct(
    "v1.PodReadinessGate",
    &[Field {
        name: "ConditionType",
        json: "conditionType",
        inline: false,
        ty: &T_V1_PODCONDITIONTYPE,
    }],
);
static T_V1_PODRESOURCECLAIM: GoType = GoType::Struct(
    "v1.PodResourceClaim",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ResourceClaimName",
            json: "resourceClaimName",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "ResourceClaimTemplateName",
            json: "resourceClaimTemplateName",
            inline: false,
            ty: &T_PTR_STRING,
        },
    ],
);
static T_V1_PODSCHEDULINGGATE: GoType = GoType::Struct(
    "v1.PodSchedulingGate",
    &[Field {
        name: "Name",
        json: "name",
        inline: false,
        ty: &T_STRING,
    }],
);
static T_V1_PODSECURITYCONTEXT: GoType = GoType::Struct(
    "v1.PodSecurityContext",
    &[
        Field {
            name: "SELinuxOptions",
            json: "seLinuxOptions",
            inline: false,
            ty: &T_PTR_V1_SELINUXOPTIONS,
        },
        Field {
            name: "WindowsOptions",
            json: "windowsOptions",
            inline: false,
            ty: &T_PTR_V1_WINDOWSSECURITYCONTEXTOPTIONS,
        },
        Field {
            name: "RunAsUser",
            json: "runAsUser",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "RunAsGroup",
            json: "runAsGroup",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "RunAsNonRoot",
            json: "runAsNonRoot",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "SupplementalGroups",
            json: "supplementalGroups",
            inline: false,
            ty: &T_SLICE_INT64,
        },
        Field {
            name: "SupplementalGroupsPolicy",
            json: "supplementalGroupsPolicy",
            inline: false,
            ty: &T_PTR_V1_SUPPLEMENTALGROUPSPOLICY,
        },
        Field {
            name: "FSGroup",
            json: "fsGroup",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "Sysctls",
            json: "sysctls",
            inline: false,
            ty: &T_SLICE_V1_SYSCTL,
        },
        Field {
            name: "FSGroupChangePolicy",
            json: "fsGroupChangePolicy",
            inline: false,
            ty: &T_PTR_V1_PODFSGROUPCHANGEPOLICY,
        },
        Field {
            name: "SeccompProfile",
            json: "seccompProfile",
            inline: false,
            ty: &T_PTR_V1_SECCOMPPROFILE,
        },
        Field {
            name: "AppArmorProfile",
            json: "appArmorProfile",
            inline: false,
            ty: &T_PTR_V1_APPARMORPROFILE,
        },
        Field {
            name: "SELinuxChangePolicy",
            json: "seLinuxChangePolicy",
            inline: false,
            ty: &T_PTR_V1_PODSELINUXCHANGEPOLICY,
        },
    ],
);
static T_V1_PODSELINUXCHANGEPOLICY: GoType = GoType::Str("v1.PodSELinuxChangePolicy");
static T_V1_PODSPEC: GoType = GoType::Struct(
    "v1.PodSpec",
    &[
        Field {
            name: "Volumes",
            json: "volumes",
            inline: false,
            ty: &T_SLICE_V1_VOLUME,
        },
        Field {
            name: "InitContainers",
            json: "initContainers",
            inline: false,
            ty: &T_SLICE_V1_CONTAINER,
        },
        Field {
            name: "Containers",
            json: "containers",
            inline: false,
            ty: &T_SLICE_V1_CONTAINER,
        },
        Field {
            name: "EphemeralContainers",
            json: "ephemeralContainers",
            inline: false,
            ty: &T_SLICE_V1_EPHEMERALCONTAINER,
        },
        Field {
            name: "RestartPolicy",
            json: "restartPolicy",
            inline: false,
            ty: &T_V1_RESTARTPOLICY,
        },
        Field {
            name: "TerminationGracePeriodSeconds",
            json: "terminationGracePeriodSeconds",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "ActiveDeadlineSeconds",
            json: "activeDeadlineSeconds",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "DNSPolicy",
            json: "dnsPolicy",
            inline: false,
            ty: &T_V1_DNSPOLICY,
        },
        Field {
            name: "NodeSelector",
            json: "nodeSelector",
            inline: false,
            ty: &T_MAP_STRING_STRING,
        },
        Field {
            name: "ServiceAccountName",
            json: "serviceAccountName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "DeprecatedServiceAccount",
            json: "serviceAccount",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "AutomountServiceAccountToken",
            json: "automountServiceAccountToken",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "NodeName",
            json: "nodeName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "HostNetwork",
            json: "hostNetwork",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "HostPID",
            json: "hostPID",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "HostIPC",
            json: "hostIPC",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "ShareProcessNamespace",
            json: "shareProcessNamespace",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "SecurityContext",
            json: "securityContext",
            inline: false,
            ty: &T_PTR_V1_PODSECURITYCONTEXT,
        },
        Field {
            name: "ImagePullSecrets",
            json: "imagePullSecrets",
            inline: false,
            ty: &T_SLICE_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "Hostname",
            json: "hostname",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Subdomain",
            json: "subdomain",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Affinity",
            json: "affinity",
            inline: false,
            ty: &T_PTR_V1_AFFINITY,
        },
        Field {
            name: "SchedulerName",
            json: "schedulerName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Tolerations",
            json: "tolerations",
            inline: false,
            ty: &T_SLICE_V1_TOLERATION,
        },
        Field {
            name: "HostAliases",
            json: "hostAliases",
            inline: false,
            ty: &T_SLICE_V1_HOSTALIAS,
        },
        Field {
            name: "PriorityClassName",
            json: "priorityClassName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Priority",
            json: "priority",
            inline: false,
            ty: &T_PTR_INT32,
        },
        Field {
            name: "DNSConfig",
            json: "dnsConfig",
            inline: false,
            ty: &T_PTR_V1_PODDNSCONFIG,
        },
        Field {
            name: "ReadinessGates",
            json: "readinessGates",
            inline: false,
            ty: &T_SLICE_V1_PODREADINESSGATE,
        },
        Field {
            name: "RuntimeClassName",
            json: "runtimeClassName",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "EnableServiceLinks",
            json: "enableServiceLinks",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "PreemptionPolicy",
            json: "preemptionPolicy",
            inline: false,
            ty: &T_PTR_V1_PREEMPTIONPOLICY,
        },
        Field {
            name: "Overhead",
            json: "overhead",
            inline: false,
            ty: &T_V1_RESOURCELIST,
        },
        Field {
            name: "TopologySpreadConstraints",
            json: "topologySpreadConstraints",
            inline: false,
            ty: &T_SLICE_V1_TOPOLOGYSPREADCONSTRAINT,
        },
        Field {
            name: "SetHostnameAsFQDN",
            json: "setHostnameAsFQDN",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "OS",
            json: "os",
            inline: false,
            ty: &T_PTR_V1_PODOS,
        },
        Field {
            name: "HostUsers",
            json: "hostUsers",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "SchedulingGates",
            json: "schedulingGates",
            inline: false,
            ty: &T_SLICE_V1_PODSCHEDULINGGATE,
        },
        Field {
            name: "ResourceClaims",
            json: "resourceClaims",
            inline: false,
            ty: &T_SLICE_V1_PODRESOURCECLAIM,
        },
        Field {
            name: "Resources",
            json: "resources",
            inline: false,
            ty: &T_PTR_V1_RESOURCEREQUIREMENTS,
        },
    ],
);
static T_V1_PODTEMPLATESPEC: GoType = GoType::Struct(
    "v1.PodTemplateSpec",
    &[
        Field {
            name: "ObjectMeta",
            json: "metadata",
            inline: false,
            ty: &T_META_V1_OBJECTMETA,
        },
        Field {
            name: "Spec",
            json: "spec",
            inline: false,
            ty: &T_V1_PODSPEC,
        },
    ],
);
static T_V1_PORTWORXVOLUMESOURCE: GoType = GoType::Struct(
    "v1.PortworxVolumeSource",
    &[
        Field {
            name: "VolumeID",
            json: "volumeID",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_PREEMPTIONPOLICY: GoType = GoType::Str("v1.PreemptionPolicy");
static T_V1_PREFERREDSCHEDULINGTERM: GoType = GoType::Struct(
    "v1.PreferredSchedulingTerm",
    &[
        Field {
            name: "Weight",
            json: "weight",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "Preference",
            json: "preference",
            inline: false,
            ty: &T_V1_NODESELECTORTERM,
        },
    ],
);
static T_V1_PROBE: GoType = GoType::Struct(
    "v1.Probe",
    &[
        Field {
            name: "ProbeHandler",
            json: "ProbeHandler",
            inline: true,
            ty: &T_V1_PROBEHANDLER,
        },
        Field {
            name: "InitialDelaySeconds",
            json: "initialDelaySeconds",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "TimeoutSeconds",
            json: "timeoutSeconds",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "PeriodSeconds",
            json: "periodSeconds",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "SuccessThreshold",
            json: "successThreshold",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "FailureThreshold",
            json: "failureThreshold",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "TerminationGracePeriodSeconds",
            json: "terminationGracePeriodSeconds",
            inline: false,
            ty: &T_PTR_INT64,
        },
    ],
);
static T_V1_PROBEHANDLER: GoType = GoType::Struct(
    "v1.ProbeHandler",
    &[
        Field {
            name: "Exec",
            json: "exec",
            inline: false,
            ty: &T_PTR_V1_EXECACTION,
        },
        Field {
            name: "HTTPGet",
            json: "httpGet",
            inline: false,
            ty: &T_PTR_V1_HTTPGETACTION,
        },
        Field {
            name: "TCPSocket",
            json: "tcpSocket",
            inline: false,
            ty: &T_PTR_V1_TCPSOCKETACTION,
        },
        Field {
            name: "GRPC",
            json: "grpc",
            inline: false,
            ty: &T_PTR_V1_GRPCACTION,
        },
    ],
);
static T_V1_PROCMOUNTTYPE: GoType = GoType::Str("v1.ProcMountType");
static T_V1_PROJECTEDVOLUMESOURCE: GoType = GoType::Struct(
    "v1.ProjectedVolumeSource",
    &[
        Field {
            name: "Sources",
            json: "sources",
            inline: false,
            ty: &T_SLICE_V1_VOLUMEPROJECTION,
        },
        Field {
            name: "DefaultMode",
            json: "defaultMode",
            inline: false,
            ty: &T_PTR_INT32,
        },
    ],
);
static T_V1_PROTOCOL: GoType = GoType::Str("v1.Protocol");
static T_V1_PULLPOLICY: GoType = GoType::Str("v1.PullPolicy");
static T_V1_QUOBYTEVOLUMESOURCE: GoType = GoType::Struct(
    "v1.QuobyteVolumeSource",
    &[
        Field {
            name: "Registry",
            json: "registry",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Volume",
            json: "volume",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "User",
            json: "user",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Group",
            json: "group",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Tenant",
            json: "tenant",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_RBDVOLUMESOURCE: GoType = GoType::Struct(
    "v1.RBDVolumeSource",
    &[
        Field {
            name: "CephMonitors",
            json: "monitors",
            inline: false,
            ty: &T_SLICE_STRING,
        },
        Field {
            name: "RBDImage",
            json: "image",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "RBDPool",
            json: "pool",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "RadosUser",
            json: "user",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Keyring",
            json: "keyring",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "SecretRef",
            json: "secretRef",
            inline: false,
            ty: &T_PTR_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_RECURSIVEREADONLYMODE: GoType = GoType::Str("v1.RecursiveReadOnlyMode");
static T_V1_RESOURCECLAIM: GoType = GoType::Struct(
    "v1.ResourceClaim",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Request",
            json: "request",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_RESOURCEFIELDSELECTOR: GoType = GoType::Struct(
    "v1.ResourceFieldSelector",
    &[
        Field {
            name: "ContainerName",
            json: "containerName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Resource",
            json: "resource",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Divisor",
            json: "divisor",
            inline: false,
            ty: &T_RESOURCE_QUANTITY,
        },
    ],
);
static T_V1_RESOURCELIST: GoType =
    GoType::Map("v1.ResourceList", &T_V1_RESOURCENAME, &T_RESOURCE_QUANTITY);
static T_V1_RESOURCENAME: GoType = GoType::Str("v1.ResourceName");
static T_V1_RESOURCEREQUIREMENTS: GoType = GoType::Struct(
    "v1.ResourceRequirements",
    &[
        Field {
            name: "Limits",
            json: "limits",
            inline: false,
            ty: &T_V1_RESOURCELIST,
        },
        Field {
            name: "Requests",
            json: "requests",
            inline: false,
            ty: &T_V1_RESOURCELIST,
        },
        Field {
            name: "Claims",
            json: "claims",
            inline: false,
            ty: &T_SLICE_V1_RESOURCECLAIM,
        },
    ],
);
static T_V1_RESOURCERESIZERESTARTPOLICY: GoType = GoType::Str("v1.ResourceResizeRestartPolicy");
static T_V1_RESTARTPOLICY: GoType = GoType::Str("v1.RestartPolicy");
static T_V1_SCALEIOVOLUMESOURCE: GoType = GoType::Struct(
    "v1.ScaleIOVolumeSource",
    &[
        Field {
            name: "Gateway",
            json: "gateway",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "System",
            json: "system",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "SecretRef",
            json: "secretRef",
            inline: false,
            ty: &T_PTR_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "SSLEnabled",
            json: "sslEnabled",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "ProtectionDomain",
            json: "protectionDomain",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "StoragePool",
            json: "storagePool",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "StorageMode",
            json: "storageMode",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "VolumeName",
            json: "volumeName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
    ],
);
static T_V1_SECCOMPPROFILE: GoType = GoType::Struct(
    "v1.SeccompProfile",
    &[
        Field {
            name: "Type",
            json: "type",
            inline: false,
            ty: &T_V1_SECCOMPPROFILETYPE,
        },
        Field {
            name: "LocalhostProfile",
            json: "localhostProfile",
            inline: false,
            ty: &T_PTR_STRING,
        },
    ],
);
static T_V1_SECCOMPPROFILETYPE: GoType = GoType::Str("v1.SeccompProfileType");
static T_V1_SECRETENVSOURCE: GoType = GoType::Struct(
    "v1.SecretEnvSource",
    &[
        Field {
            name: "LocalObjectReference",
            json: "LocalObjectReference",
            inline: true,
            ty: &T_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_V1_SECRETKEYSELECTOR: GoType = GoType::Struct(
    "v1.SecretKeySelector",
    &[
        Field {
            name: "LocalObjectReference",
            json: "LocalObjectReference",
            inline: true,
            ty: &T_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "Key",
            json: "key",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_V1_SECRETPROJECTION: GoType = GoType::Struct(
    "v1.SecretProjection",
    &[
        Field {
            name: "LocalObjectReference",
            json: "LocalObjectReference",
            inline: true,
            ty: &T_V1_LOCALOBJECTREFERENCE,
        },
        Field {
            name: "Items",
            json: "items",
            inline: false,
            ty: &T_SLICE_V1_KEYTOPATH,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_V1_SECRETVOLUMESOURCE: GoType = GoType::Struct(
    "v1.SecretVolumeSource",
    &[
        Field {
            name: "SecretName",
            json: "secretName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Items",
            json: "items",
            inline: false,
            ty: &T_SLICE_V1_KEYTOPATH,
        },
        Field {
            name: "DefaultMode",
            json: "defaultMode",
            inline: false,
            ty: &T_PTR_INT32,
        },
        Field {
            name: "Optional",
            json: "optional",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);
static T_V1_SECURITYCONTEXT: GoType = GoType::Struct(
    "v1.SecurityContext",
    &[
        Field {
            name: "Capabilities",
            json: "capabilities",
            inline: false,
            ty: &T_PTR_V1_CAPABILITIES,
        },
        Field {
            name: "Privileged",
            json: "privileged",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "SELinuxOptions",
            json: "seLinuxOptions",
            inline: false,
            ty: &T_PTR_V1_SELINUXOPTIONS,
        },
        Field {
            name: "WindowsOptions",
            json: "windowsOptions",
            inline: false,
            ty: &T_PTR_V1_WINDOWSSECURITYCONTEXTOPTIONS,
        },
        Field {
            name: "RunAsUser",
            json: "runAsUser",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "RunAsGroup",
            json: "runAsGroup",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "RunAsNonRoot",
            json: "runAsNonRoot",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "ReadOnlyRootFilesystem",
            json: "readOnlyRootFilesystem",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "AllowPrivilegeEscalation",
            json: "allowPrivilegeEscalation",
            inline: false,
            ty: &T_PTR_BOOL,
        },
        Field {
            name: "ProcMount",
            json: "procMount",
            inline: false,
            ty: &T_PTR_V1_PROCMOUNTTYPE,
        },
        Field {
            name: "SeccompProfile",
            json: "seccompProfile",
            inline: false,
            ty: &T_PTR_V1_SECCOMPPROFILE,
        },
        Field {
            name: "AppArmorProfile",
            json: "appArmorProfile",
            inline: false,
            ty: &T_PTR_V1_APPARMORPROFILE,
        },
    ],
);
static T_V1_SELINUXOPTIONS: GoType = GoType::Struct(
    "v1.SELinuxOptions",
    &[
        Field {
            name: "User",
            json: "user",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Role",
            json: "role",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Type",
            json: "type",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Level",
            json: "level",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_SERVICEACCOUNTTOKENPROJECTION: GoType = GoType::Struct(
    "v1.ServiceAccountTokenProjection",
    &[
        Field {
            name: "Audience",
            json: "audience",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ExpirationSeconds",
            json: "expirationSeconds",
            inline: false,
            ty: &T_PTR_INT64,
        },
        Field {
            name: "Path",
            json: "path",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_SIGNAL: GoType = GoType::Str("v1.Signal");
static T_V1_SLEEPACTION: GoType = GoType::Struct(
    "v1.SleepAction",
    &[Field {
        name: "Seconds",
        json: "seconds",
        inline: false,
        ty: &T_INT64,
    }],
);
static T_V1_STORAGEMEDIUM: GoType = GoType::Str("v1.StorageMedium");
static T_V1_STORAGEOSVOLUMESOURCE: GoType = GoType::Struct(
    "v1.StorageOSVolumeSource",
    &[
        Field {
            name: "VolumeName",
            json: "volumeName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "VolumeNamespace",
            json: "volumeNamespace",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "SecretRef",
            json: "secretRef",
            inline: false,
            ty: &T_PTR_V1_LOCALOBJECTREFERENCE,
        },
    ],
);
static T_V1_SUPPLEMENTALGROUPSPOLICY: GoType = GoType::Str("v1.SupplementalGroupsPolicy");
static T_V1_SYSCTL: GoType = GoType::Struct(
    "v1.Sysctl",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Value",
            json: "value",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_TAINTEFFECT: GoType = GoType::Str("v1.TaintEffect");
static T_V1_TCPSOCKETACTION: GoType = GoType::Struct(
    "v1.TCPSocketAction",
    &[
        Field {
            name: "Port",
            json: "port",
            inline: false,
            ty: &T_INTSTR_INTORSTRING,
        },
        Field {
            name: "Host",
            json: "host",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_TERMINATIONMESSAGEPOLICY: GoType = GoType::Str("v1.TerminationMessagePolicy");
static T_V1_TOLERATION: GoType = GoType::Struct(
    "v1.Toleration",
    &[
        Field {
            name: "Key",
            json: "key",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Operator",
            json: "operator",
            inline: false,
            ty: &T_V1_TOLERATIONOPERATOR,
        },
        Field {
            name: "Value",
            json: "value",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Effect",
            json: "effect",
            inline: false,
            ty: &T_V1_TAINTEFFECT,
        },
        Field {
            name: "TolerationSeconds",
            json: "tolerationSeconds",
            inline: false,
            ty: &T_PTR_INT64,
        },
    ],
);
static T_V1_TOLERATIONOPERATOR: GoType = GoType::Str("v1.TolerationOperator");
static T_V1_TOPOLOGYSPREADCONSTRAINT: GoType = GoType::Struct(
    "v1.TopologySpreadConstraint",
    &[
        Field {
            name: "MaxSkew",
            json: "maxSkew",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "TopologyKey",
            json: "topologyKey",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "WhenUnsatisfiable",
            json: "whenUnsatisfiable",
            inline: false,
            ty: &T_V1_UNSATISFIABLECONSTRAINTACTION,
        },
        Field {
            name: "LabelSelector",
            json: "labelSelector",
            inline: false,
            ty: &T_PTR_V1_LABELSELECTOR,
        },
        Field {
            name: "MinDomains",
            json: "minDomains",
            inline: false,
            ty: &T_PTR_INT32,
        },
        Field {
            name: "NodeAffinityPolicy",
            json: "nodeAffinityPolicy",
            inline: false,
            ty: &T_PTR_V1_NODEINCLUSIONPOLICY,
        },
        Field {
            name: "NodeTaintsPolicy",
            json: "nodeTaintsPolicy",
            inline: false,
            ty: &T_PTR_V1_NODEINCLUSIONPOLICY,
        },
        Field {
            name: "MatchLabelKeys",
            json: "matchLabelKeys",
            inline: false,
            ty: &T_SLICE_STRING,
        },
    ],
);
static T_V1_TYPEDLOCALOBJECTREFERENCE: GoType = GoType::Struct(
    "v1.TypedLocalObjectReference",
    &[
        Field {
            name: "APIGroup",
            json: "apiGroup",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "Kind",
            json: "kind",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_TYPEDOBJECTREFERENCE: GoType = GoType::Struct(
    "v1.TypedObjectReference",
    &[
        Field {
            name: "APIGroup",
            json: "apiGroup",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "Kind",
            json: "kind",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "Namespace",
            json: "namespace",
            inline: false,
            ty: &T_PTR_STRING,
        },
    ],
);
static T_V1_UNSATISFIABLECONSTRAINTACTION: GoType = GoType::Str("v1.UnsatisfiableConstraintAction");
static T_V1_URISCHEME: GoType = GoType::Str("v1.URIScheme");
static T_V1_VOLUME: GoType = GoType::Struct(
    "v1.Volume",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "VolumeSource",
            json: "VolumeSource",
            inline: true,
            ty: &T_V1_VOLUMESOURCE,
        },
    ],
);
static T_V1_VOLUMEDEVICE: GoType = GoType::Struct(
    "v1.VolumeDevice",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "DevicePath",
            json: "devicePath",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_VOLUMEMOUNT: GoType = GoType::Struct(
    "v1.VolumeMount",
    &[
        Field {
            name: "Name",
            json: "name",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "ReadOnly",
            json: "readOnly",
            inline: false,
            ty: &T_BOOL,
        },
        Field {
            name: "RecursiveReadOnly",
            json: "recursiveReadOnly",
            inline: false,
            ty: &T_PTR_V1_RECURSIVEREADONLYMODE,
        },
        Field {
            name: "MountPath",
            json: "mountPath",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "SubPath",
            json: "subPath",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "MountPropagation",
            json: "mountPropagation",
            inline: false,
            ty: &T_PTR_V1_MOUNTPROPAGATIONMODE,
        },
        Field {
            name: "SubPathExpr",
            json: "subPathExpr",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_VOLUMEPROJECTION: GoType = GoType::Struct(
    "v1.VolumeProjection",
    &[
        Field {
            name: "Secret",
            json: "secret",
            inline: false,
            ty: &T_PTR_V1_SECRETPROJECTION,
        },
        Field {
            name: "DownwardAPI",
            json: "downwardAPI",
            inline: false,
            ty: &T_PTR_V1_DOWNWARDAPIPROJECTION,
        },
        Field {
            name: "ConfigMap",
            json: "configMap",
            inline: false,
            ty: &T_PTR_V1_CONFIGMAPPROJECTION,
        },
        Field {
            name: "ServiceAccountToken",
            json: "serviceAccountToken",
            inline: false,
            ty: &T_PTR_V1_SERVICEACCOUNTTOKENPROJECTION,
        },
        Field {
            name: "ClusterTrustBundle",
            json: "clusterTrustBundle",
            inline: false,
            ty: &T_PTR_V1_CLUSTERTRUSTBUNDLEPROJECTION,
        },
    ],
);
static T_V1_VOLUMERESOURCEREQUIREMENTS: GoType = GoType::Struct(
    "v1.VolumeResourceRequirements",
    &[
        Field {
            name: "Limits",
            json: "limits",
            inline: false,
            ty: &T_V1_RESOURCELIST,
        },
        Field {
            name: "Requests",
            json: "requests",
            inline: false,
            ty: &T_V1_RESOURCELIST,
        },
    ],
);
static T_V1_VOLUMESOURCE: GoType = GoType::Struct(
    "v1.VolumeSource",
    &[
        Field {
            name: "HostPath",
            json: "hostPath",
            inline: false,
            ty: &T_PTR_V1_HOSTPATHVOLUMESOURCE,
        },
        Field {
            name: "EmptyDir",
            json: "emptyDir",
            inline: false,
            ty: &T_PTR_V1_EMPTYDIRVOLUMESOURCE,
        },
        Field {
            name: "GCEPersistentDisk",
            json: "gcePersistentDisk",
            inline: false,
            ty: &T_PTR_V1_GCEPERSISTENTDISKVOLUMESOURCE,
        },
        Field {
            name: "AWSElasticBlockStore",
            json: "awsElasticBlockStore",
            inline: false,
            ty: &T_PTR_V1_AWSELASTICBLOCKSTOREVOLUMESOURCE,
        },
        Field {
            name: "GitRepo",
            json: "gitRepo",
            inline: false,
            ty: &T_PTR_V1_GITREPOVOLUMESOURCE,
        },
        Field {
            name: "Secret",
            json: "secret",
            inline: false,
            ty: &T_PTR_V1_SECRETVOLUMESOURCE,
        },
        Field {
            name: "NFS",
            json: "nfs",
            inline: false,
            ty: &T_PTR_V1_NFSVOLUMESOURCE,
        },
        Field {
            name: "ISCSI",
            json: "iscsi",
            inline: false,
            ty: &T_PTR_V1_ISCSIVOLUMESOURCE,
        },
        Field {
            name: "Glusterfs",
            json: "glusterfs",
            inline: false,
            ty: &T_PTR_V1_GLUSTERFSVOLUMESOURCE,
        },
        Field {
            name: "PersistentVolumeClaim",
            json: "persistentVolumeClaim",
            inline: false,
            ty: &T_PTR_V1_PERSISTENTVOLUMECLAIMVOLUMESOURCE,
        },
        Field {
            name: "RBD",
            json: "rbd",
            inline: false,
            ty: &T_PTR_V1_RBDVOLUMESOURCE,
        },
        Field {
            name: "FlexVolume",
            json: "flexVolume",
            inline: false,
            ty: &T_PTR_V1_FLEXVOLUMESOURCE,
        },
        Field {
            name: "Cinder",
            json: "cinder",
            inline: false,
            ty: &T_PTR_V1_CINDERVOLUMESOURCE,
        },
        Field {
            name: "CephFS",
            json: "cephfs",
            inline: false,
            ty: &T_PTR_V1_CEPHFSVOLUMESOURCE,
        },
        Field {
            name: "Flocker",
            json: "flocker",
            inline: false,
            ty: &T_PTR_V1_FLOCKERVOLUMESOURCE,
        },
        Field {
            name: "DownwardAPI",
            json: "downwardAPI",
            inline: false,
            ty: &T_PTR_V1_DOWNWARDAPIVOLUMESOURCE,
        },
        Field {
            name: "FC",
            json: "fc",
            inline: false,
            ty: &T_PTR_V1_FCVOLUMESOURCE,
        },
        Field {
            name: "AzureFile",
            json: "azureFile",
            inline: false,
            ty: &T_PTR_V1_AZUREFILEVOLUMESOURCE,
        },
        Field {
            name: "ConfigMap",
            json: "configMap",
            inline: false,
            ty: &T_PTR_V1_CONFIGMAPVOLUMESOURCE,
        },
        Field {
            name: "VsphereVolume",
            json: "vsphereVolume",
            inline: false,
            ty: &T_PTR_V1_VSPHEREVIRTUALDISKVOLUMESOURCE,
        },
        Field {
            name: "Quobyte",
            json: "quobyte",
            inline: false,
            ty: &T_PTR_V1_QUOBYTEVOLUMESOURCE,
        },
        Field {
            name: "AzureDisk",
            json: "azureDisk",
            inline: false,
            ty: &T_PTR_V1_AZUREDISKVOLUMESOURCE,
        },
        Field {
            name: "PhotonPersistentDisk",
            json: "photonPersistentDisk",
            inline: false,
            ty: &T_PTR_V1_PHOTONPERSISTENTDISKVOLUMESOURCE,
        },
        Field {
            name: "Projected",
            json: "projected",
            inline: false,
            ty: &T_PTR_V1_PROJECTEDVOLUMESOURCE,
        },
        Field {
            name: "PortworxVolume",
            json: "portworxVolume",
            inline: false,
            ty: &T_PTR_V1_PORTWORXVOLUMESOURCE,
        },
        Field {
            name: "ScaleIO",
            json: "scaleIO",
            inline: false,
            ty: &T_PTR_V1_SCALEIOVOLUMESOURCE,
        },
        Field {
            name: "StorageOS",
            json: "storageos",
            inline: false,
            ty: &T_PTR_V1_STORAGEOSVOLUMESOURCE,
        },
        Field {
            name: "CSI",
            json: "csi",
            inline: false,
            ty: &T_PTR_V1_CSIVOLUMESOURCE,
        },
        Field {
            name: "Ephemeral",
            json: "ephemeral",
            inline: false,
            ty: &T_PTR_V1_EPHEMERALVOLUMESOURCE,
        },
        Field {
            name: "Image",
            json: "image",
            inline: false,
            ty: &T_PTR_V1_IMAGEVOLUMESOURCE,
        },
    ],
);
static T_V1_VSPHEREVIRTUALDISKVOLUMESOURCE: GoType = GoType::Struct(
    "v1.VsphereVirtualDiskVolumeSource",
    &[
        Field {
            name: "VolumePath",
            json: "volumePath",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "FSType",
            json: "fsType",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "StoragePolicyName",
            json: "storagePolicyName",
            inline: false,
            ty: &T_STRING,
        },
        Field {
            name: "StoragePolicyID",
            json: "storagePolicyID",
            inline: false,
            ty: &T_STRING,
        },
    ],
);
static T_V1_WEIGHTEDPODAFFINITYTERM: GoType = GoType::Struct(
    "v1.WeightedPodAffinityTerm",
    &[
        Field {
            name: "Weight",
            json: "weight",
            inline: false,
            ty: &T_INT32,
        },
        Field {
            name: "PodAffinityTerm",
            json: "podAffinityTerm",
            inline: false,
            ty: &T_V1_PODAFFINITYTERM,
        },
    ],
);
static T_V1_WINDOWSSECURITYCONTEXTOPTIONS: GoType = GoType::Struct(
    "v1.WindowsSecurityContextOptions",
    &[
        Field {
            name: "GMSACredentialSpecName",
            json: "gmsaCredentialSpecName",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "GMSACredentialSpec",
            json: "gmsaCredentialSpec",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "RunAsUserName",
            json: "runAsUserName",
            inline: false,
            ty: &T_PTR_STRING,
        },
        Field {
            name: "HostProcess",
            json: "hostProcess",
            inline: false,
            ty: &T_PTR_BOOL,
        },
    ],
);

/// `v1.PodTemplateSpec`.
pub static POD_TEMPLATE_SPEC: &GoType = &T_V1_PODTEMPLATESPEC;
