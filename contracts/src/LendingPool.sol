// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {DateLib} from "./DateLib.sol";
import {Loan, LoanTerms} from "./Loan.sol";

/// @notice ERC-4626-style share token whose assets sit idle in the pool or with whitelisted
/// subaccounts and loans. The operator reports what the subaccounts hold (`updateTotalAssets`,
/// bounded by `maxChangePercent`); redemptions are requested, wait `lagDuration`, are processed
/// by date and then claimed by their receiver.
contract LendingPool is ERC20, Ownable {
    using SafeERC20 for IERC20;

    event Deposit(address indexed sender, address indexed owner, uint256 assets, uint256 shares);
    event Withdraw(
        address indexed sender, address indexed receiver, address indexed owner, uint256 assets, uint256 shares
    );
    event WithdrawalRequested(
        address ownerAddr,
        address receiverAddr,
        uint256 shares,
        uint256 assets,
        uint256 fee,
        uint256 year,
        uint256 month,
        uint256 day
    );
    /// Emitted by earlier versions of the pool; kept so indexers decode both.
    event WithdrawalProcessed(uint256 assetsAmount, uint256 processedOn, address receiverAddr, uint256 requestedOn);
    event WithdrawalProcessed(
        uint256 assetsAmount, uint256 processedOn, address receiverAddr, uint256 requestedOn, bool wasBlacklisted
    );
    event DepositWithdrawalStatusChanged(bool bDepositsPaused, bool bWithdrawalsPaused);
    event OnMaxSupplyChanged(uint256 prevValue, uint256 newValue);
    event FeeCollectorUpdated(address newFeeCollectorAddr);
    event FeesCollected(uint256 amount);
    event ManagementFeeCharged(uint256 managementFeeAmount);
    event ManagementFeeUpdated(uint256 newManagementFeePercent);
    event MaxChangePercentUpdated(uint256 newValue);
    event OperatorUpdated(address newAddr);
    event OnEmergencyWithdraw(uint256 withdrawalAmount, address tokenAddr, address destinationAddr);
    event NewLoanDeployedByPool(address loanAddr, uint256 aprWithTwoDecimals);

    struct Request {
        address owner;
        address receiver;
        uint256 shares;
        uint256 assets;
        uint256 requestedOn;
    }

    IERC20Metadata private immutable _asset;
    uint8 private immutable _decimals;

    address public operator;
    address public feeCollector;
    uint256 public externalAssets;
    uint256 public assetsUpdatedOn;
    uint256 public lagDuration;
    /// Largest move of a total-assets report, in basis points of the previous report.
    uint256 public maxChangePercent;
    /// Fee on redemptions, in basis points.
    uint256 public withdrawalFee;
    /// Annual management fee, in basis points of total assets.
    uint256 public managementFeePercent;
    uint256 public maxSupply;
    bool public depositsPaused;
    bool public withdrawalsPaused;
    uint256 public timelockDuration;
    uint256 public accruedFees;
    uint256 public lastFeeChargedOn;
    /// Net assets of requests not yet processed, and of processed requests not yet claimed.
    uint256 public pendingLiabilityAssets;
    uint256 public claimableAssets;
    uint256 public globalLiabilityShares;

    mapping(address => bool) public whitelistedSubAccounts;
    uint256 public totalWhitelistedSubAccounts;
    mapping(address => bool) public isLoan;

    mapping(uint256 => Request[]) private _requests; // by due day (days since epoch)
    mapping(uint256 => uint256) private _processed; // cursor per due day
    mapping(uint256 => mapping(address => uint256)) private _claimable;

    modifier onlyOperator() {
        require(msg.sender == operator, "LendingPool: not operator");
        _;
    }

    modifier onlyOwnerOrOperator() {
        require(msg.sender == operator || msg.sender == owner(), "LendingPool: not owner or operator");
        _;
    }

    constructor(
        IERC20Metadata asset_,
        string memory name_,
        string memory symbol_,
        address owner_,
        address operator_,
        address feeCollector_,
        uint256 lagDuration_,
        uint256 maxChangePercent_,
        uint256 withdrawalFee_,
        uint256 managementFeePercent_,
        uint256 maxSupply_
    ) ERC20(name_, symbol_) Ownable(owner_) {
        _asset = asset_;
        _decimals = asset_.decimals();
        operator = operator_;
        feeCollector = feeCollector_;
        lagDuration = lagDuration_;
        maxChangePercent = maxChangePercent_;
        withdrawalFee = withdrawalFee_;
        managementFeePercent = managementFeePercent_;
        maxSupply = maxSupply_;
        lastFeeChargedOn = block.timestamp;
    }

    // ---- views -------------------------------------------------------------------------------

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    function asset() external view returns (address) {
        return address(_asset);
    }

    function totalAssets() public view returns (uint256) {
        uint256 gross = _asset.balanceOf(address(this)) + externalAssets;
        uint256 owed = accruedFees + pendingLiabilityAssets + claimableAssets;
        return gross > owed ? gross - owed : 0;
    }

    function convertToShares(uint256 assets) public view returns (uint256) {
        uint256 supply = totalSupply();
        uint256 ta = totalAssets();
        return (supply == 0 || ta == 0) ? assets : Math.mulDiv(assets, supply, ta);
    }

    function convertToAssets(uint256 shares) public view returns (uint256) {
        uint256 supply = totalSupply();
        return supply == 0 ? shares : Math.mulDiv(shares, totalAssets(), supply);
    }

    function getWithdrawalEpoch() public view returns (uint256 year, uint256 month, uint256 day, uint256 claimableEpoch) {
        claimableEpoch = (block.timestamp + lagDuration) / DateLib.SECONDS_PER_DAY;
        (year, month, day) = DateLib.daysToDate(claimableEpoch);
    }

    function getScheduledTransactionsByDate(uint256 year, uint256 month, uint256 day)
        external
        view
        returns (Request[] memory)
    {
        return _requests[DateLib.daysFromDate(year, month, day)];
    }

    function getRequirementByDate(uint256 year, uint256 month, uint256 day) external view returns (uint256 total) {
        uint256 d = DateLib.daysFromDate(year, month, day);
        Request[] storage reqs = _requests[d];
        for (uint256 i = _processed[d]; i < reqs.length; i++) {
            total += reqs[i].assets;
        }
    }

    function getClaimableAmountByReceiver(uint256 year, uint256 month, uint256 day, address receiver)
        external
        view
        returns (uint256)
    {
        return _claimable[DateLib.daysFromDate(year, month, day)][receiver];
    }

    // ---- holders -----------------------------------------------------------------------------

    function deposit(uint256 assets, address receiver) external returns (uint256 shares) {
        require(!depositsPaused, "LendingPool: deposits paused");
        require(assets > 0, "LendingPool: zero assets");
        shares = convertToShares(assets);
        require(shares > 0, "LendingPool: zero shares");
        require(maxSupply == 0 || totalSupply() + shares <= maxSupply, "LendingPool: max supply");
        IERC20(address(_asset)).safeTransferFrom(msg.sender, address(this), assets);
        _mint(receiver, shares);
        emit Deposit(msg.sender, receiver, assets, shares);
    }

    /// Burns the shares now at today's price; the net assets become claimable on the due date.
    function requestRedeem(uint256 shares, address receiver, address holder) external returns (uint256 assets) {
        require(!withdrawalsPaused, "LendingPool: withdrawals paused");
        require(shares > 0, "LendingPool: zero shares");
        if (msg.sender != holder) _spendAllowance(holder, msg.sender, shares);
        assets = convertToAssets(shares);
        uint256 fee = (assets * withdrawalFee) / 10_000;
        _burn(holder, shares);
        accruedFees += fee;
        pendingLiabilityAssets += assets - fee;
        globalLiabilityShares += shares;
        (uint256 y, uint256 m, uint256 d, uint256 epoch) = getWithdrawalEpoch();
        _requests[epoch].push(Request(holder, receiver, shares, assets - fee, block.timestamp));
        emit WithdrawalRequested(holder, receiver, shares, assets, fee, y, m, d);
    }

    function claim(uint256 year, uint256 month, uint256 day, address receiver) external returns (uint256 amount) {
        uint256 d = DateLib.daysFromDate(year, month, day);
        amount = _claimable[d][receiver];
        require(amount > 0, "LendingPool: nothing to claim");
        _claimable[d][receiver] = 0;
        claimableAssets -= amount;
        IERC20(address(_asset)).safeTransfer(receiver, amount);
    }

    // ---- operator ----------------------------------------------------------------------------

    function processAllClaimsByDate(uint256 year, uint256 month, uint256 day, uint256 maxLimit)
        external
        onlyOperator
        returns (uint256 count)
    {
        uint256 d = DateLib.daysFromDate(year, month, day);
        require(d * DateLib.SECONDS_PER_DAY <= block.timestamp, "LendingPool: date not reached");
        Request[] storage reqs = _requests[d];
        uint256 i = _processed[d];
        for (; i < reqs.length && count < maxLimit; i++) {
            Request storage r = reqs[i];
            require(
                _asset.balanceOf(address(this)) >= claimableAssets + accruedFees + r.assets,
                "LendingPool: insufficient liquidity"
            );
            pendingLiabilityAssets -= r.assets;
            claimableAssets += r.assets;
            globalLiabilityShares -= r.shares;
            _claimable[d][r.receiver] += r.assets;
            emit WithdrawalProcessed(r.assets, block.timestamp, r.receiver, r.requestedOn, false);
            emit Withdraw(msg.sender, r.receiver, r.owner, r.assets, r.shares);
            count++;
        }
        _processed[d] = i;
    }

    function updateTotalAssets(uint256 newExternalAssets) external onlyOperator {
        uint256 prev = externalAssets;
        if (prev > 0) {
            uint256 diff = newExternalAssets > prev ? newExternalAssets - prev : prev - newExternalAssets;
            require(diff * 10_000 <= prev * maxChangePercent, "LendingPool: change too large");
        }
        externalAssets = newExternalAssets;
        assetsUpdatedOn = block.timestamp;
    }

    function depositToSubaccount(uint256 amount, address subaccount) external onlyOperator {
        require(whitelistedSubAccounts[subaccount], "LendingPool: subaccount not whitelisted");
        require(
            _asset.balanceOf(address(this)) >= claimableAssets + accruedFees + amount, "LendingPool: insufficient idle"
        );
        externalAssets += amount;
        IERC20(address(_asset)).safeTransfer(subaccount, amount);
    }

    function withdrawFromSubaccount(uint256 amount, address subaccount) external onlyOperator {
        require(whitelistedSubAccounts[subaccount], "LendingPool: subaccount not whitelisted");
        externalAssets = externalAssets > amount ? externalAssets - amount : 0;
        IERC20(address(_asset)).safeTransferFrom(subaccount, address(this), amount);
    }

    /// Accrues the annual management fee pro rata since the last charge.
    function chargeManagementFee() external onlyOperator returns (uint256 amount) {
        uint256 elapsed = block.timestamp - lastFeeChargedOn;
        amount = Math.mulDiv(totalAssets(), managementFeePercent * elapsed, 10_000 * 365 days);
        lastFeeChargedOn = block.timestamp;
        accruedFees += amount;
        emit ManagementFeeCharged(amount);
    }

    function collectFees() external onlyOperator returns (uint256 amount) {
        amount = accruedFees;
        require(amount > 0, "LendingPool: no fees");
        require(_asset.balanceOf(address(this)) >= claimableAssets + amount, "LendingPool: insufficient idle");
        accruedFees = 0;
        IERC20(address(_asset)).safeTransfer(feeCollector, amount);
        emit FeesCollected(amount);
    }

    function deployLoan(address borrower, uint256 principal, uint256 aprWithTwoDecimals, uint256 termDays)
        external
        onlyOperator
        returns (address loanAddr)
    {
        require(
            _asset.balanceOf(address(this)) >= claimableAssets + accruedFees + principal, "LendingPool: insufficient idle"
        );
        Loan loan = new Loan(
            address(this),
            borrower,
            address(_asset),
            principal,
            aprWithTwoDecimals,
            termDays,
            LoanTerms({
                collateralToken: address(0),
                maintenanceCollateralRatio: 0,
                paymentIntervalInSeconds: 30 days,
                notifyLender: true
            })
        );
        loanAddr = address(loan);
        isLoan[loanAddr] = true;
        externalAssets += principal;
        IERC20(address(_asset)).safeTransfer(loanAddr, principal);
        emit NewLoanDeployedByPool(loanAddr, aprWithTwoDecimals);
        loan.fund();
    }

    function proposeLoanApr(address loanAddr, uint256 newApr) external onlyOperator {
        require(isLoan[loanAddr], "LendingPool: not a loan");
        Loan(loanAddr).proposeNewApr(newApr);
    }

    function callLoan(address loanAddr, uint256 callbackPeriodInDays, uint256 gracePeriodInDays) external onlyOperator {
        require(isLoan[loanAddr], "LendingPool: not a loan");
        Loan(loanAddr).callLoan(callbackPeriodInDays, gracePeriodInDays);
    }

    /// Called by a loan of this pool when principal comes back, which moves it from external to idle.
    function onPrincipalRepaid(uint256 amount) external {
        require(isLoan[msg.sender], "LendingPool: not a loan");
        externalAssets = externalAssets > amount ? externalAssets - amount : 0;
    }

    function pauseDepositsAndWithdrawals(bool pauseDeposits, bool pauseWithdrawals) external onlyOwnerOrOperator {
        depositsPaused = pauseDeposits;
        withdrawalsPaused = pauseWithdrawals;
        emit DepositWithdrawalStatusChanged(pauseDeposits, pauseWithdrawals);
    }

    function addWhitelistedSubaccount(address[] calldata subaccounts) external onlyOwnerOrOperator {
        for (uint256 i = 0; i < subaccounts.length; i++) {
            if (!whitelistedSubAccounts[subaccounts[i]]) {
                whitelistedSubAccounts[subaccounts[i]] = true;
                totalWhitelistedSubAccounts += 1;
            }
        }
    }

    // ---- owner (the timelock) ----------------------------------------------------------------

    function updateOperator(address newOperator) external onlyOwner {
        operator = newOperator;
        emit OperatorUpdated(newOperator);
    }

    function updateFeeCollector(address newFeeCollector) external onlyOwner {
        feeCollector = newFeeCollector;
        emit FeeCollectorUpdated(newFeeCollector);
    }

    function updateManagementFee(uint256 newPercent) external onlyOwner {
        require(newPercent <= 1_000, "LendingPool: fee too high");
        managementFeePercent = newPercent;
        emit ManagementFeeUpdated(newPercent);
    }

    function updateMaxChangePercent(uint256 newValue) external onlyOwner {
        maxChangePercent = newValue;
        emit MaxChangePercentUpdated(newValue);
    }

    function updateMaxSupply(uint256 newValue) external onlyOwner {
        emit OnMaxSupplyChanged(maxSupply, newValue);
        maxSupply = newValue;
    }

    function updateWithdrawalFee(uint256 newFee) external onlyOwner {
        require(newFee <= 1_000, "LendingPool: fee too high");
        withdrawalFee = newFee;
    }

    function updateTimelockDuration(uint256 seconds_) external onlyOwner {
        timelockDuration = seconds_;
    }

    function emergencyWithdraw(address token, address destination, uint256 amount) external onlyOwner {
        IERC20(token).safeTransfer(destination, amount);
        emit OnEmergencyWithdraw(amount, token, destination);
    }
}
