/// APNs's two environments: production, and development (Apple's sandbox). An app's
/// `environment` setting, the host its requests go to, the environments a push
/// certificate is issued for and the environment the simulator plays are all this type.
package enum APNsEnvironment: String, Sendable, CaseIterable {
    case production
    case development
}
